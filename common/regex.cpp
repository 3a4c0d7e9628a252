#include "common/regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdint>

namespace loopr {

namespace {

constexpr std::uint32_t kMatchLimit = 1'000'000;
constexpr std::uint32_t kDepthLimit = 10'000;
constexpr std::uint32_t kHeapLimitKib = 8 * 1024;
constexpr std::size_t kJitStackStart = 32 * 1024;
constexpr std::size_t kJitStackMax = 1024 * 1024;

// Per-thread match state: pcre2 match data and contexts are not safe to
// share between threads, compiled code is.
class MatchScratch {
 public:
  MatchScratch()
      : data_(pcre2_match_data_create(1, nullptr)),
        context_(pcre2_match_context_create(nullptr)),
        jit_stack_(pcre2_jit_stack_create(kJitStackStart, kJitStackMax, nullptr)) {
    if (context_ != nullptr) {
      pcre2_set_match_limit(context_, kMatchLimit);
      pcre2_set_depth_limit(context_, kDepthLimit);
      pcre2_set_heap_limit(context_, kHeapLimitKib);
      if (jit_stack_ != nullptr) pcre2_jit_stack_assign(context_, nullptr, jit_stack_);
    }
  }
  ~MatchScratch() {
    pcre2_jit_stack_free(jit_stack_);
    pcre2_match_context_free(context_);
    pcre2_match_data_free(data_);
  }
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;

  bool usable() const { return data_ != nullptr && context_ != nullptr; }
  pcre2_match_data* data() const { return data_; }
  pcre2_match_context* context() const { return context_; }

 private:
  pcre2_match_data* data_;        // owned; one ovector pair: only "did it match" is asked
  pcre2_match_context* context_;  // owned
  pcre2_jit_stack* jit_stack_;    // owned
};

}  // namespace

Result<Regex> Regex::compile(std::string_view source, RegexSyntax syntax) {
  std::unique_ptr<pcre2_compile_context, void (*)(pcre2_compile_context*)> context(
      pcre2_compile_context_create(nullptr), pcre2_compile_context_free);
  if (context == nullptr) return make_error(errc::internal, "out of memory compiling a pattern");
  std::uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C;
  if (syntax == RegexSyntax::ecmascript) {
    pcre2_set_compile_extra_options(context.get(), PCRE2_EXTRA_ALT_BSUX);
    pcre2_set_newline(context.get(), PCRE2_NEWLINE_ANYCRLF);
    options |= PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX;
  }
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                   options, &error, &offset, context.get());
  if (code == nullptr) {
    PCRE2_UCHAR buffer[256];
    const int n = pcre2_get_error_message(error, buffer, sizeof buffer);
    const std::string reason =
        n < 0 ? "PCRE2 error " + std::to_string(error)
              : std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
    return make_error(errc::invalid_arguments,
                      "at offset " + std::to_string(offset) + ": " + reason);
  }
  // Without JIT (not built in, or out of executable memory) pcre2_match
  // interprets the pattern, under the same limits.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  Regex regex;
  regex.code_ =
      std::shared_ptr<void>(code, [](void* p) { pcre2_code_free(static_cast<pcre2_code*>(p)); });
  regex.source_ = std::string(source);
  return regex;
}

RegexMatch Regex::search(std::string_view subject) const {
  thread_local MatchScratch scratch;
  if (!scratch.usable()) return RegexMatch::gave_up;
  const int rc = pcre2_match(static_cast<const pcre2_code*>(code_.get()),
                             reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0,
                             scratch.data(), scratch.context());
  if (rc >= 0) return RegexMatch::match;  // 0: matched, ovector too small for the groups
  if (rc == PCRE2_ERROR_NOMATCH) return RegexMatch::no_match;
  return RegexMatch::gave_up;
}

}  // namespace loopr
