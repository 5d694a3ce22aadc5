# shellcheck shell=bash
# Sourced by the bench scripts: the best of several timed runs.
#
# time_best_of RUNS COMMAND...: runs COMMAND RUNS times under GNU time (its output discarded) and
# sets best_wall and best_cpu, the least wall and CPU (user + sys) seconds of the runs, and rc, the
# last run's exit status. On a shared machine the least disturbed run is the closest to an idle
# one. Writes GNU time's report to $timing, which the caller makes (and removes).
# shellcheck disable=SC2034,SC2154  # best_wall, best_cpu and rc are the caller's, as is timing
time_best_of() {
  local runs=$1
  shift
  best_wall="" best_cpu="" rc=0
  for _ in $(seq "$runs"); do
    local t wall cpu
    rc=0
    /usr/bin/time -o "$timing" -f "%e %U %S" "$@" >/dev/null 2>&1 || rc=$?
    t=$(tail -1 "$timing")
    wall=$(echo "$t" | awk '{print $1}')
    cpu=$(echo "$t" | awk '{print $2 + $3}')
    if [ -z "$best_wall" ] || [ "$(echo "$wall < $best_wall" | bc)" = 1 ]; then best_wall=$wall; fi
    if [ -z "$best_cpu" ] || [ "$(echo "$cpu < $best_cpu" | bc)" = 1 ]; then best_cpu=$cpu; fi
  done
}
