#include "llm/credentials.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ostream>

#include "common/unique_fd.hpp"
#include "llm/provider.hpp"

namespace loopr::llm {

namespace {

constexpr std::size_t kMaxKeyFileBytes = 64 * 1024;

// A key travels in an HTTP header: control characters (a second line) would
// break or inject headers.
bool has_control_characters(std::string_view text) {
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return true;
  }
  return false;
}

Result<Credential> read_key_file(const std::string& path, std::string_view env_name) {
  std::string also;
  if (!env_name.empty()) {
    also = ", or set the environment variable ";
    also += env_name;
  }
  auto refuse = [&](std::string message, std::string hint) -> Result<Credential> {
    return make_error(errc::provider_auth, std::move(message), std::move(hint) + also);
  };
  int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (raw < 0) {
    int err = errno;
    return refuse("cannot read the key file " + path + ": " + std::strerror(err),
                  "put the API key in " + path + " (readable by you only: chmod 600)");
  }
  UniqueFd fd(raw);
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return refuse("the key file " + path + " is not a regular file",
                  "point key_file at a file holding the API key");
  }
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      return refuse("cannot read the key file " + path + ": " + std::strerror(err),
                    "check the file's permissions");
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxKeyFileBytes) {
      return refuse("the key file " + path + " is too large to hold an API key",
                    "put only the API key in " + path);
    }
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!text.empty() && text.back() == '\r') text.pop_back();
  if (text.empty()) {
    return refuse("the key file " + path + " is empty", "put the API key in " + path);
  }
  if (has_control_characters(text)) {
    return refuse("the key file " + path + " holds more than one line or control characters",
                  "put only the API key, on one line, in " + path);
  }
  Credential credential;
  credential.key.emplace(std::move(text));
  credential.source = "key file " + path;
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    credential.note = "the key file " + path + " can be read by other users (mode " + mode +
                      "); run: chmod 600 " + path;
  }
  return credential;
}

}  // namespace

Result<Credential> load_credential(const config::ProviderSettings& settings,
                                   const config::EnvLookup& env) {
  return load_credential(settings.api_key_env, settings.key_file, env);
}

Result<Credential> load_credential(const std::string& api_key_env, const std::string& key_file,
                                   const config::EnvLookup& env) {
  const std::string& name = api_key_env;
  if (!name.empty()) {
    std::optional<std::string> value = env ? env(name) : std::nullopt;
    if (value && !value->empty()) {
      if (has_control_characters(*value)) {
        return make_error(errc::provider_auth,
                          "the environment variable " + name +
                              " holds control characters (a newline?), which cannot be sent "
                              "as an API key",
                          "set " + name + " to the key alone");
      }
      Credential credential;
      credential.key.emplace(std::move(*value));
      credential.source = "environment variable " + name;
      return credential;
    }
    if (key_file.empty()) {
      return make_error(errc::provider_auth,
                        "no API key: the environment variable " + name + " is not set",
                        "export " + name +
                            "=<your key> before starting looprd, or set key_file "
                            "for this provider in loopr.toml");
    }
  }
  if (!key_file.empty()) return read_key_file(key_file, name);
  Credential none;
  none.source = "no key";
  return none;
}

}  // namespace loopr::llm
