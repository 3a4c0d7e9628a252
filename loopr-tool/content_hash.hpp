// Content hashes for read-before-edit: "sha256:<64 hex digits>" of a file's
// bytes. read_file reports it; write_file and edit_file accept the hash of the
// last read as `expected_hash` and refuse with stale_read if the file changed.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace loopr::tool {

// Incremental SHA-256 (OpenSSL EVP). Not thread-safe; one per stream.
class ContentHasher {
 public:
  ContentHasher();
  ~ContentHasher();
  ContentHasher(const ContentHasher&) = delete;
  ContentHasher& operator=(const ContentHasher&) = delete;

  void update(std::string_view bytes);
  // "sha256:<hex>"; the hasher must not be used afterwards.
  std::string finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string content_hash(std::string_view bytes);

}  // namespace loopr::tool
