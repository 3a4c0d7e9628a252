// NATS nkeys for users (docs/cluster.md): an Ed25519 key pair whose seed is
// written "SU..." and whose public key "U..." is what nats-server.conf
// lists. Written here, over OpenSSL's Ed25519, because libnats 3.4 signs
// with a seed but cannot tell its public key, which it must announce, and
// Debian 12 packages no nkey tool (`nk`) to make one. The encoding
// (github.com/nats-io/nkeys): base32 (RFC 4648, no padding) of the prefix
// byte(s), the 32 key bytes and a CRC-16/XMODEM, little-endian.
#pragma once

#include <string>
#include <string_view>

#include "common/error.hpp"

namespace loopr::cluster {

// A new user seed ("SU..."), from the kernel's random bytes.
Result<std::string> new_user_seed();
// The public key ("U...") of a user seed; errc::invalid_arguments for text
// that is not one (wrong prefix, bad base32 or checksum).
Result<std::string> user_public_key(std::string_view seed);
// The seed in a seed file: its first line that starts with "SU".
Result<std::string> read_user_seed(const std::string& path);

}  // namespace loopr::cluster
