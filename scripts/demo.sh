#!/usr/bin/env bash
# loopr's main job, end to end on this machine: installs what is missing,
# builds, then runs real loopr-tool calls on a sample tree and shows each
# result. (As the daemon and the lane runners land, this grows into starting
# looprd and sending the same calls through every lane.)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh

tool=build/bin/loopr-tool
tree=$(mktemp -d /tmp/loopr-demo-XXXXXX)
trap 'rm -rf "$tree"' EXIT

mkdir -p "$tree/src" "$tree/build"
printf 'build/\n' > "$tree/.gitignore"
printf 'generated\n' > "$tree/build/out.txt"
cat > "$tree/src/greet.c" <<'C'
#include <stdio.h>

int main(void) {
	printf("hello, world\n");
	return 0;
}
C
printf '# demo\nA sample tree for loopr.\n' > "$tree/README.md"

call() {  # call TOOL JSON: prints the call and its result, returns the exit code
  local name=$1 args=$2 status=0
  printf '\n$ loopr-tool %s <<< %s\n' "$name" "$args"
  "$tool" "$name" --worktree "$tree" <<<"$args" || status=$?
  printf '(exit %d)\n' "$status"
  return 0
}

echo "== loopr demo: tools run on $tree"
call list_directory '{"recursive": true}'
call read_file '{"path": "src/greet.c"}'
hash=$("$tool" read_file --worktree "$tree" <<<'{"path":"src/greet.c"}' |
       sed -n 's/.*"content_hash":"\([^"]*\)".*/\1/p')
call edit_file "{\"path\": \"src/greet.c\", \"old_string\": \"hello, world\", \"new_string\": \"hello, loopr\", \"expected_hash\": \"$hash\"}"
echo "-- an edit that does not match shows the nearest candidate, whitespace visible:"
call edit_file '{"path": "src/greet.c", "old_string": "    return 0;", "new_string": "    return 1;"}'
echo "-- a stale read is refused (the hash is from before the edit):"
call write_file "{\"path\": \"src/greet.c\", \"content\": \"lost\", \"expected_hash\": \"$hash\"}"
call grep '{"pattern": "hello|generated", "context": 1}'
call glob '{"pattern": "**/*"}'
echo "-- paths that leave the worktree are refused:"
call read_file '{"path": "../../etc/passwd"}'
ln -s /etc "$tree/etc-link"
call read_file '{"path": "etc-link/passwd"}'
echo
echo "== demo done"
