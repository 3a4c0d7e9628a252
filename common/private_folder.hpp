// The folders loopr keeps its control socket, state and logs in. Only the
// user's own processes may reach them: a folder other users can write lets
// them replace the socket or the database (SECURITY.md, class 15).
//
// loopr never loosens or tightens the mode of a folder it did not create:
// --socket and --state-dir may name a user's own folder, and a chmod there
// would change what the user chose.
#pragma once

#include <string>

#include "common/error.hpp"

namespace loopr {

// mkdir -p: every component that is missing is created with mode 0700;
// components that exist are left as they are. Fails if the path names a file.
Result<void> make_private_folders(const std::string& path);

// Checks that `path` is a folder (not a symlink to one), owned by the
// effective uid, and not writable by its group or by others. Never changes it;
// the error says what to do.
Result<void> require_private_folder(const std::string& path);

}  // namespace loopr
