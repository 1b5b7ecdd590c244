#!/bin/sh
# A stand-in for moesim that misbehaves as MOESIM_FAKE says, so that the fuzz driver's
# checks are shown to fail when they should (tests/CMakeLists.txt, fuzz-driver-*).
case "$MOESIM_FAKE" in
  crash) kill -SEGV $$ ;;
  internal) echo "moesim: internal error: boom" >&2; exit 3 ;;
  silent) exit 2 ;;                                          # refused without saying why
  hang) exec sleep 30 ;;
  leak) cat outside.env; exit 0 ;;                           # a refused file's value in the output
  execute) mkdir -p s && touch s/EXECUTED_fake; exit 0 ;;    # a script's command run
  refuse) echo "moesim: error: s/run.sh: --x: no" >&2; exit 2 ;;
  *) exit 0 ;;
esac
