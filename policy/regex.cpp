#include "policy/regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdint>

namespace loopr::policy {

namespace {

constexpr std::uint32_t kMatchLimit = 1'000'000;
constexpr std::uint32_t kDepthLimit = 10'000;
constexpr std::uint32_t kHeapLimitKib = 8 * 1024;

// Per-thread match state: pcre2 match data and contexts are not safe to
// share between threads, compiled code is.
class MatchScratch {
 public:
  MatchScratch()
      : data_(pcre2_match_data_create(1, nullptr)), context_(pcre2_match_context_create(nullptr)) {
    if (context_ != nullptr) {
      pcre2_set_match_limit(context_, kMatchLimit);
      pcre2_set_depth_limit(context_, kDepthLimit);
      pcre2_set_heap_limit(context_, kHeapLimitKib);
    }
  }
  ~MatchScratch() {
    pcre2_match_context_free(context_);
    pcre2_match_data_free(data_);
  }
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;

  bool usable() const { return data_ != nullptr && context_ != nullptr; }
  pcre2_match_data* data() const { return data_; }
  pcre2_match_context* context() const { return context_; }

 private:
  pcre2_match_data* data_;        // owned
  pcre2_match_context* context_;  // owned
};

}  // namespace

Result<Regex> Regex::compile(std::string_view source) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                   PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C,
                                   &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buffer[256];
    const int n = pcre2_get_error_message(error, buffer, sizeof buffer);
    const std::string reason =
        n < 0 ? "PCRE2 error " + std::to_string(error)
              : std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
    return make_error(errc::invalid_arguments,
                      "at offset " + std::to_string(offset) + ": " + reason);
  }
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // without JIT: interpreted, same limits
  Regex regex;
  regex.code_ =
      std::shared_ptr<void>(code, [](void* p) { pcre2_code_free(static_cast<pcre2_code*>(p)); });
  regex.source_ = std::string(source);
  return regex;
}

std::optional<bool> Regex::search(std::string_view subject) const {
  thread_local MatchScratch scratch;
  if (!scratch.usable()) return std::nullopt;
  const int rc = pcre2_match(static_cast<const pcre2_code*>(code_.get()),
                             reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0,
                             scratch.data(), scratch.context());
  if (rc >= 0) return true;
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  return std::nullopt;
}

}  // namespace loopr::policy
