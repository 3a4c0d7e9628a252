// `looprctl tui`: replaces looprctl with loopr-tui (tui/main.cpp), found
// next to the looprctl binary (/proc/self/exe's folder), passing the socket
// and configuration folder looprctl resolved, so both talk to one daemon.
#pragma once

#include <string>

#include "client/commands.hpp"

namespace loopr::client {

// Execs loopr-tui; returns only on failure (exit status, message on err).
int run_tui(const CommandContext& context, const std::string& repo);

}  // namespace loopr::client
