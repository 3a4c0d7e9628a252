#!/bin/sh
# The sample's tests: each line runs calc.sh and compares its answer.
fail=0
check() {
  got=$(sh calc.sh "$1" "$2" "$3")
  if [ "$got" = "$4" ]; then
    echo "ok   calc.sh $1 $2 $3 = $got"
  else
    echo "FAIL calc.sh $1 $2 $3 gave $got, expected $4"
    fail=1
  fi
}
check add 2 3 5
check add 10 -4 6
check mul 6 7 42
exit $fail
