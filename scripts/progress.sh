# Sourced by run_all.sh and test.sh: a line every 30 s while a long command runs.
#
# alive PHASE COMMAND...  runs COMMAND and prints "PHASE: still running (N s)" every 30 s until it ends
# (FLASHSTAGES_PROGRESS_SECONDS sets another interval: scripts/test_setup.sh uses 1).
# Ninja prints a line when a compile ends, and one nvcc compile takes minutes. Both write straight to
# the terminal (nothing piped, nothing buffered); on a terminal the line starts on a new one so Ninja's
# status line stays. The loop ends itself if the calling script dies.
alive() {
  local phase=$1 start=$SECONDS nl='' pid rc=0
  shift
  [ -t 1 ] && nl='\n'
  (while sleep "${FLASHSTAGES_PROGRESS_SECONDS:-30}" >/dev/null 2>&1 && kill -0 $$ 2>/dev/null; do
     printf '%b%s: still running (%d s)\n' "$nl" "$phase" $((SECONDS - start)); done) &
  pid=$!
  "$@" || rc=$?
  kill $pid 2>/dev/null; wait $pid 2>/dev/null || true
  return $rc
}
