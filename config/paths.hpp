// Where loopr keeps its files (DESIGN §2). For each place the first that is
// set wins: command-line flag, LOOPR_* variable, the value in loopr.toml
// (state and socket only), the XDG variable, then the fallback:
//
//   config_dir   --config-dir  LOOPR_CONFIG_DIR  $XDG_CONFIG_HOME/loopr  $HOME/.config/loopr
//   state_dir    --state-dir   LOOPR_STATE_DIR   [daemon] state_dir
//                                                $XDG_STATE_HOME/loopr   $HOME/.local/state/loopr
//   socket_path  --socket      LOOPR_SOCKET      [daemon] socket
//                                                $XDG_RUNTIME_DIR/loopr/looprd.sock
//                                                /tmp/loopr-$UID/looprd.sock
//
// Empty variables count as unset, and relative XDG_* values are ignored (as
// the XDG Base Directory spec asks); relative flags and LOOPR_* values are
// made absolute against the current directory. Every returned path is
// absolute and lexically normal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/environment.hpp"

namespace loopr::config {

struct DaemonSettings;

struct PathFlags {
  std::string config_dir;   // --config-dir, empty when not given
  std::string state_dir;    // --state-dir
  std::string socket_path;  // --socket
};

struct Paths {
  std::string config_dir;
  std::string state_dir;
  std::string socket_path;

  std::string settings_file() const;      // config_dir/loopr.toml
  std::string user_catalog_file() const;  // config_dir/catalog.toml
};

// Longest path a Unix socket address holds (sun_path less its terminating NUL).
inline constexpr std::size_t kMaxSocketPathBytes = 107;

// Throws loopr::StartupError when a place cannot be resolved (no HOME and no
// override) or the socket path is too long for a Unix socket address.
// `configured` carries loopr.toml's [daemon] socket / state_dir, already
// loaded from settings_file() of a first resolution; may be null.
Paths resolve_paths(const PathFlags& flags, const EnvLookup& env, std::uint32_t uid,
                    const DaemonSettings* configured = nullptr);
// The same with the process environment and getuid().
Paths resolve_paths(const PathFlags& flags, const DaemonSettings* configured = nullptr);

// A repository's own catalog, <repo_dir>/.loopr/catalog.toml: pass it to
// Catalog::load as the repository file (tighten-only, see CatalogTrust), never
// among the user's files. Empty when repo_dir is empty. The file need not
// exist (Catalog::load skips it).
std::string repository_catalog_file(const std::string& repo_dir);

}  // namespace loopr::config
