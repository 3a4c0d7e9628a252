// looprctl: loopr's command-line client (DESIGN.md §1). See client/cli.hpp.
#include <iostream>

#include "client/cli.hpp"

int main(int argc, char** argv) {
  return loopr::client::run_looprctl(argc, argv, std::cin, std::cout, std::cerr);
}
