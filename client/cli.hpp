// looprctl's command line (CLI11): global flags, subcommands, dispatch.
//
//   looprctl [--socket PATH] [--json] [--config-dir DIR] [--state-dir DIR] COMMAND
//
// Global flags may also follow the command. Exit statuses: client/failure.hpp
// (a command-line mistake is 2).
#pragma once

#include <iosfwd>

namespace loopr::client {

// Runs looprctl with `argv`; returns the process exit status. Reads stdin
// only for `call TOOL -`.
int run_looprctl(int argc, const char* const* argv, std::istream& in, std::ostream& out,
                 std::ostream& err);

}  // namespace loopr::client
