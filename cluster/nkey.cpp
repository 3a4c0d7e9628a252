#include "cluster/nkey.hpp"

#include <openssl/evp.h>
#include <sys/random.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <memory>
#include <vector>

namespace loopr::cluster {

namespace {

constexpr std::uint8_t kPrefixSeed = 18 << 3;  // 'S'
constexpr std::uint8_t kPrefixUser = 20 << 3;  // 'U'
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

std::uint16_t crc16(const std::vector<std::uint8_t>& bytes) {
  std::uint16_t crc = 0;
  for (std::uint8_t byte : bytes) {
    crc = static_cast<std::uint16_t>(crc ^ (byte << 8));
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<std::uint16_t>(crc << 1);
  }
  return crc;
}

std::string base32(const std::vector<std::uint8_t>& bytes) {
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (std::uint8_t byte : bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += kAlphabet[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += kAlphabet[(buffer << (5 - bits)) & 31];
  return out;
}

Result<std::vector<std::uint8_t>> unbase32(std::string_view text) {
  std::vector<std::uint8_t> out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    const auto index = kAlphabet.find(c);
    if (index == std::string_view::npos) {
      return make_error(errc::invalid_arguments, "not an nkey: a character outside base32");
    }
    buffer = (buffer << 5) | static_cast<std::uint32_t>(index);
    bits += 5;
    if (bits >= 8) {
      out.push_back(static_cast<std::uint8_t>(buffer >> (bits - 8)));
      bits -= 8;
    }
  }
  return out;
}

std::string encode_with_crc(std::vector<std::uint8_t> bytes) {
  const std::uint16_t crc = crc16(bytes);
  bytes.push_back(static_cast<std::uint8_t>(crc & 0xff));
  bytes.push_back(static_cast<std::uint8_t>(crc >> 8));
  return base32(bytes);
}

std::string encode_seed(const std::array<std::uint8_t, 32>& raw) {
  std::vector<std::uint8_t> bytes = {static_cast<std::uint8_t>(kPrefixSeed | (kPrefixUser >> 5)),
                                     static_cast<std::uint8_t>((kPrefixUser & 31) << 3)};
  bytes.insert(bytes.end(), raw.begin(), raw.end());
  return encode_with_crc(std::move(bytes));
}

}  // namespace

Result<std::string> new_user_seed() {
  std::array<std::uint8_t, 32> raw{};
  if (::getrandom(raw.data(), raw.size(), 0) != static_cast<ssize_t>(raw.size())) {
    return errno_error(errno, "getrandom", "an nkey seed");
  }
  return encode_seed(raw);
}

Result<std::string> user_public_key(std::string_view seed) {
  auto bytes = unbase32(seed);
  if (!bytes) return std::move(bytes).error();
  const auto invalid = [] {
    return make_error(errc::invalid_arguments, "not a NATS user seed (\"SU...\")",
                      "make one with `loopr-runner --new-nkey FILE` (docs/cluster.md)");
  };
  if (bytes->size() != 36) return invalid();
  const std::vector<std::uint8_t> body(bytes->begin(), bytes->end() - 2);
  const std::uint16_t crc = crc16(body);
  if ((*bytes)[34] != (crc & 0xff) || (*bytes)[35] != (crc >> 8)) return invalid();
  if (((*bytes)[0] & 0xf8) != kPrefixSeed) return invalid();
  const std::uint8_t prefix =
      static_cast<std::uint8_t>((((*bytes)[0] & 7) << 5) | (((*bytes)[1] & 0xf8) >> 3));
  if (prefix != kPrefixUser) return invalid();
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, bytes->data() + 2, 32),
      EVP_PKEY_free);
  if (!key) return make_error(errc::internal, "OpenSSL could not load the Ed25519 seed");
  std::array<std::uint8_t, 32> public_key{};
  std::size_t length = public_key.size();
  if (EVP_PKEY_get_raw_public_key(key.get(), public_key.data(), &length) != 1 || length != 32) {
    return make_error(errc::internal, "OpenSSL could not derive the Ed25519 public key");
  }
  std::vector<std::uint8_t> out = {kPrefixUser};
  out.insert(out.end(), public_key.begin(), public_key.end());
  return encode_with_crc(std::move(out));
}

Result<std::string> read_user_seed(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return make_error(errc::not_found, "cannot read the nkey seed file " + path,
                      "check the path and that this user may read it");
  }
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.pop_back();
    const auto start = line.find_first_not_of(" \t");
    if (start != std::string::npos && line.compare(start, 2, "SU") == 0) return line.substr(start);
  }
  return make_error(errc::invalid_arguments, path + " holds no NATS user seed (\"SU...\")",
                    "make one with `loopr-runner --new-nkey FILE` (docs/cluster.md)");
}

}  // namespace loopr::cluster
