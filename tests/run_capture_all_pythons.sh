#!/usr/bin/env bash
# Run the capture tests under the default python and every CPython 3.11/3.12/3.13 that pyenv
# (or PATH) provides. Exits non-zero if any interpreter fails. Usage:
#   tests/run_capture_all_pythons.sh [extra pytest args]
set -u
cd "$(dirname "$0")/.."
tests=(tests/test_capture.py tests/test_capture_corpus.py tests/test_capture_resume.py)
seen=""
status=0
candidates=(python3)
for v in 3.11 3.12 3.13; do
    candidates+=("python$v")
    for p in "$HOME"/.pyenv/versions/"$v"*/bin/python /root/.pyenv/versions/"$v"*/bin/python; do
        [ -x "$p" ] && candidates+=("$p")
    done
done
for py in "${candidates[@]}"; do
    command -v "$py" >/dev/null 2>&1 || continue
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
    case " $seen " in *" $ver "*) continue ;; esac
    if ! "$py" -c 'import eager, capture, pytest' >/dev/null 2>&1; then
        echo "== python $ver ($py): wick or pytest not installed, skipped" >&2
        continue
    fi
    seen="$seen $ver"
    echo "== python $ver ($py)"
    "$py" -m pytest -q "${tests[@]}" "$@" || status=1
done
echo "== capture tests ran under:$seen"
exit $status
