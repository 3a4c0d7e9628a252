// looprd's log: spdlog to stderr. Under systemd (JOURNAL_STREAM set) each
// line starts with its syslog priority ("<6>") and carries no timestamp, so
// journald files it at the right level; elsewhere lines carry a timestamp.
#pragma once

#include "config/settings.hpp"

namespace loopr::daemon {

void configure_logging(config::LogLevel level);

}  // namespace loopr::daemon
