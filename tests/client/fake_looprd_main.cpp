// looprctl-fake-daemon: stands in for looprd in `looprctl daemon start`
// tests. Prints its arguments (into the log looprctl gave it), then serves
// the FakeDaemon defaults on --socket until daemon.shutdown. Exits by itself
// after a minute so a failed test cannot leave it behind for long.
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <string>

#include "tests/client/fake_daemon.hpp"

int main(int argc, char** argv) {
  ::alarm(60);
  std::string socket_path;
  std::cout << "fake-looprd started with:";
  for (int i = 1; i < argc; ++i) {
    std::cout << ' ' << argv[i];
    if (std::strcmp(argv[i], "--socket") == 0 && i + 1 < argc) socket_path = argv[i + 1];
  }
  std::cout << std::endl;
  if (socket_path.empty()) {
    std::cerr << "fake-looprd: --socket is required" << std::endl;
    return 2;
  }
  loopr::test::FakeDaemon daemon(socket_path);
  daemon.serve();
  std::cout << "fake-looprd stopped" << std::endl;
  return 0;
}
