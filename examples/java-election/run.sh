#!/bin/sh
# Compiles Election.java once (again when it changed), then runs it. Instances started together share
# the one compile: the first takes the lock and compiles, the others wait for it, then each starts a JVM
# on the classes (a JVM that compiled its own source at every start took seconds on a busy machine).
set -e
cd "$(dirname "$0")"
if [ ! -f build/Election.class ] || [ Election.java -nt build/Election.class ]; then
  exec 9>.build.lock
  flock 9
  if [ ! -f build/Election.class ] || [ Election.java -nt build/Election.class ]; then
    rm -rf build.tmp && javac -d build.tmp Election.java && rm -rf build && mv build.tmp build
  fi
  exec 9>&-
fi
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto -cp build Election
