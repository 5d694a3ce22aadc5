#include "analyzer/pipeline/hugging_face_config.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/pipeline/hf_converter_source.h"
#include "analyzer/text/markup.h"

extern char** environ;

namespace memplan {
namespace {

namespace fs = std::filesystem;

// The converter's exit code when torch, transformers or onnx cannot be imported.
constexpr int kConverterMissingLibraries = 3;
// --hub-config's refusals (offline, no such repository, gated), each with its one-line reason.
constexpr int kHubFirstRefusal = 4, kHubLastRefusal = 6;

std::string ReadWhole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// FNV-1a, 64 bits, as 16 hex digits: a cache key, not a security boundary.
std::string Fnv1aHex(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

fs::path CacheFolder() {
  if (const char* dir = std::getenv("MEMPLAN_CACHE_DIR"); dir && *dir) return fs::path(dir) / "hf";
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "memplan" / "hf";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "memplan" / "hf";
}

std::string PythonToRun() {
  const char* python = std::getenv("MEMPLAN_PYTHON");
  return python && *python ? python : "python3";
}

// The last non-empty line of `text` (the converter's one-line reason).
std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of("\r\n ");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end + 1 - (start == std::string::npos ? 0 : start + 1));
}

struct RunResult {
  int exit_code = -1;
  std::string errors;  // what it wrote on stderr
};

// Runs `argv` with stdout discarded and stderr captured in `stderr_path`.
Expected<RunResult> Run(const std::vector<std::string>& argv, const fs::path& stderr_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return MakeError("cannot run " + argv[0] + ": " + std::strerror(spawned));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return MakeError("waiting for " + argv[0] + ": " + std::strerror(errno));
  }
  RunResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.errors = ReadWhole(stderr_path);
  return result;
}

// One run of the converter script: its exit code and its one-line reason (the last line it wrote
// on stderr, whose file is removed).
struct ConverterRun {
  int exit_code = -1;
  std::string reason;
};
Expected<ConverterRun> RunConverter(const std::vector<std::string>& argv,
                                    const fs::path& stderr_path) {
  MEMPLAN_TRY(RunResult run, Run(argv, stderr_path));
  std::error_code error;
  fs::remove(stderr_path, error);
  return ConverterRun{run.exit_code, LastLine(run.errors)};
}

// The converter found transformers or torch missing: `doing` ("converting it") says what for.
Error MissingLibrariesError(const std::string& doing, const ConverterRun& run,
                            const std::string& python) {
  return MakeError(doing + " " + run.reason + " in " + python +
                   ": tools/setup_torch_env.sh installs them, MEMPLAN_PYTHON names the Python "
                   "to use");
}

// Why a run failed in a few words: its reason, else its exit code.
std::string FailureReason(const ConverterRun& run) {
  return run.reason.empty() ? "exit " + std::to_string(run.exit_code) : run.reason;
}

}  // namespace

bool IsHuggingFaceConfig(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error))
    return fs::is_regular_file(fs::path(path) / "config.json", error);
  if (fs::path(path).extension() != ".json" || !fs::is_regular_file(path, error)) return false;
  const nlohmann::json doc = nlohmann::json::parse(ReadWhole(path), nullptr, false);
  return doc.is_object() && doc.contains("model_type") && doc["model_type"].is_string();
}

bool LooksLikeHubId(const std::string& model) {
  std::error_code error;
  if (fs::exists(fs::symlink_status(model, error))) return false;
  const size_t slash = model.find('/');
  if (slash == std::string::npos || model.find('/', slash + 1) != std::string::npos) return false;
  const std::string owner = model.substr(0, slash), name = model.substr(slash + 1);
  auto part = [](const std::string& p) {
    if (p.empty() || p.front() == '.' || p.front() == '-' || p.find("..") != std::string::npos)
      return false;
    for (char c : p)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
        return false;
    return true;
  };
  const std::string extension = fs::path(name).extension().string();
  return part(owner) && part(name) && extension != ".onnx" && extension != ".json";
}

// The converter script in the cache folder (written once per script text).
Expected<fs::path> ConverterScript(const fs::path& folder) {
  std::error_code error;
  fs::create_directories(folder, error);
  if (error)
    return MakeError("cannot create the cache folder '" + folder.string() +
                     "': " + error.message() + " (MEMPLAN_CACHE_DIR names another)");
  const fs::path script = folder / ("hf_config_to_onnx." + Fnv1aHex(kHfConverterSource) + ".py");
  if (!fs::is_regular_file(script, error))
    MEMPLAN_RETURN_IF_ERROR(WriteTextFile(script.string(), kHfConverterSource));
  return script;
}

Expected<std::string> HubConfigPath(const std::string& id, const ProgressSink& progress) {
  const fs::path folder = CacheFolder();
  MEMPLAN_TRY(fs::path script, ConverterScript(folder));
  const std::string key = Fnv1aHex(id + '\0' + std::to_string(getpid()));
  const fs::path answer = folder / (key + ".hub.txt");
  const fs::path errors = folder / (key + ".hub.stderr");
  const std::string python = PythonToRun();
  progress("resolving the Hugging Face repository " + id + " (config.json only, " + python +
           ")...");
  MEMPLAN_TRY(ConverterRun run,
              RunConverter({python, script.string(), "--hub-config", id, answer.string()}, errors));
  std::error_code error;
  const std::string config = run.exit_code == 0 ? ReadWhole(answer) : "";
  fs::remove(answer, error);
  const std::string read_as =
      "'" + id + "' is no local path, so it names a Hugging Face repository";
  if (run.exit_code == kConverterMissingLibraries)
    return MissingLibrariesError(read_as + "; resolving it", run, python);
  if (run.exit_code >= kHubFirstRefusal && run.exit_code <= kHubLastRefusal)
    return MakeError(read_as + ": " + run.reason);
  if (run.exit_code != 0 || config.empty() || !fs::is_regular_file(config, error))
    return MakeError(read_as + ": cannot resolve it (" + python + "): " + FailureReason(run));
  return config;
}

Expected<std::string> HuggingFaceConfigAsOnnx(const std::string& path,
                                              const ProgressSink& progress) {
  const fs::path config = fs::is_directory(path) ? fs::path(path) / "config.json" : fs::path(path);
  const std::string key = Fnv1aHex(ReadWhole(config) + '\0' + kHfConverterSource);
  const fs::path folder = CacheFolder();
  const fs::path onnx = folder / (key + ".onnx");
  std::error_code error;
  if (fs::is_regular_file(onnx, error)) return onnx.string();
  MEMPLAN_TRY(fs::path script, ConverterScript(folder));
  const fs::path partial = folder / (key + ".partial.onnx");
  const fs::path errors = folder / (key + ".stderr");
  const std::string python = PythonToRun();
  progress("converting " + path + " to ONNX with transformers and torch.onnx (" + python +
           ", once; cached)...");
  MEMPLAN_TRY(ConverterRun run,
              RunConverter({python, script.string(), config.string(), partial.string()}, errors));
  if (run.exit_code == kConverterMissingLibraries)
    return MissingLibrariesError("'" + path + "' is a Hugging Face config; converting it", run,
                                 python);
  if (run.exit_code != 0 || !fs::is_regular_file(partial, error)) {
    fs::remove(partial, error);
    return MakeError("cannot convert the Hugging Face config '" + path + "' (" + python +
                     "): " + FailureReason(run));
  }
  fs::rename(partial, onnx, error);
  if (error) return MakeError("cannot write '" + onnx.string() + "': " + error.message());
  return onnx.string();
}

}  // namespace memplan
