#include "runtime/cpu/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace memplan {
namespace {

// Simple floating-point operations one elementwise chunk should hold: about 10-20 microseconds
// of work, well above the cost of waking a sleeping worker.
constexpr int64_t kElementwiseChunkWork = int64_t{1} << 15;

// True on pool workers and on a caller while it runs a job: a ParallelFor from inside a body
// runs inline instead of waiting on the pool it is part of.
thread_local bool inside_parallel_region = false;

int ThreadCountFromEnvironment() {
  const char* text = std::getenv(kCpuThreadsEnvironmentVariable);
  if (text != nullptr && *text != '\0') {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end == '\0' && value > 0 && value <= 1024) return static_cast<int>(value);
    std::fprintf(stderr, "memplan: ignoring %s=%s (want a positive integer)\n",
                 kCpuThreadsEnvironmentVariable, text);
  }
  const unsigned hardware = std::thread::hardware_concurrency();
  return std::clamp(static_cast<int>(hardware), 1, kMaxDefaultCpuThreads);
}

// Workers sleep on a condition variable between jobs (no spinning, so idle threads cost no CPU
// time); the caller takes chunks too. Chunks are claimed from one atomic counter, so which
// thread runs a chunk varies but the chunks themselves do not.
class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs run_chunk(c) for c in [0, chunks) on all threads; false (nothing run) when another
  // thread's job holds the pool.
  bool TryRun(int64_t chunks, const std::function<void(int64_t)>& run_chunk) {
    std::unique_lock<std::mutex> job_lock(job_mutex_, std::try_to_lock);
    if (!job_lock.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &run_chunk;
      job_chunks_ = chunks;
      next_chunk_.store(0);
      ++generation_;
    }
    wake_.notify_all();
    inside_parallel_region = true;
    RunChunks(run_chunk, chunks);
    inside_parallel_region = false;
    std::unique_lock<std::mutex> lock(mutex_);
    // A worker that took the job counts itself active under the lock, so once none is active
    // and every chunk is claimed, no thread still holds a pointer to run_chunk.
    done_.wait(lock, [&] { return active_workers_ == 0; });
    job_ = nullptr;
    return true;
  }

 private:
  void RunChunks(const std::function<void(int64_t)>& run_chunk, int64_t chunks) {
    for (int64_t c = next_chunk_.fetch_add(1); c < chunks; c = next_chunk_.fetch_add(1)) {
      run_chunk(c);
    }
  }

  void WorkerLoop() {
    inside_parallel_region = true;
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (job_ == nullptr) continue;
      const std::function<void(int64_t)>* job = job_;
      const int64_t chunks = job_chunks_;
      ++active_workers_;
      lock.unlock();
      RunChunks(*job, chunks);
      lock.lock();
      if (--active_workers_ == 0) done_.notify_all();
    }
  }

  std::mutex job_mutex_;  // held by the caller for a whole job: one job at a time
  std::mutex mutex_;      // guards the fields below
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t job_chunks_ = 0;
  uint64_t generation_ = 0;
  int active_workers_ = 0;
  bool stop_ = false;
  std::atomic<int64_t> next_chunk_{0};
  std::vector<std::thread> workers_;
};

ThreadPool& Pool() {
  static ThreadPool pool(CpuThreadCount());
  return pool;
}

}  // namespace

int CpuThreadCount() {
  static const int count = ThreadCountFromEnvironment();
  return count;
}

void ParallelFor(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (grain <= 0) {
    std::fprintf(stderr, "internal invariant: ParallelFor grain %lld\n",
                 static_cast<long long>(grain));
    std::abort();
  }
  if (count <= 0) return;
  const int64_t chunks = (count + grain - 1) / grain;
  const auto run_chunk = [&](int64_t c) { body(c * grain, std::min(count, (c + 1) * grain)); };
  if (chunks > 1 && CpuThreadCount() > 1 && !inside_parallel_region &&
      Pool().TryRun(chunks, run_chunk)) {
    return;
  }
  for (int64_t c = 0; c < chunks; ++c) run_chunk(c);
}

int64_t ElementwiseGrain(int64_t cost_per_item) {
  return std::max<int64_t>(1, kElementwiseChunkWork / std::max<int64_t>(1, cost_per_item));
}

}  // namespace memplan
