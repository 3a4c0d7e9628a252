#!/bin/sh
# calc.sh: a tiny calculator. Usage: calc.sh add|mul A B
op=$1
a=$2
b=$3
case "$op" in
  add) echo $((a - b)) ;;
  mul) echo $((a * b)) ;;
  *) echo "usage: calc.sh add|mul A B" >&2; exit 2 ;;
esac
