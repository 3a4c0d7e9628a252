#include "loopr-tool/content_hash.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace loopr::tool {

struct ContentHasher::State {
  EVP_MD_CTX* ctx = nullptr;
};

ContentHasher::ContentHasher() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  // Allocation failure of a few hundred bytes: nothing sensible to do but stop.
  if (state_->ctx == nullptr || EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) != 1) {
    throw std::bad_alloc();
  }
}

ContentHasher::~ContentHasher() {
  EVP_MD_CTX_free(state_->ctx);
}

void ContentHasher::update(std::string_view bytes) {
  EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size());
}

std::string ContentHasher::finish() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(state_->ctx, digest, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xF];
  }
  return out;
}

std::string content_hash(std::string_view bytes) {
  ContentHasher hasher;
  hasher.update(bytes);
  return hasher.finish();
}

}  // namespace loopr::tool
