// The no-net lane's network: a fresh, empty network namespace in which only
// the loopback interface exists, brought up. Abstract Unix sockets are
// per network namespace, so the host's are unreachable from it too.
//
// Contract: called after enter_user_namespace(), before any job starts.
#pragma once

#include "common/error.hpp"

namespace loopr::runner {

Result<void> enter_empty_network_namespace();

}  // namespace loopr::runner
