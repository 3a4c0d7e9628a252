// grep {pattern, path=".", file_pattern?, context=0, case_insensitive=false,
//       output_mode="content"|"files"|"count", max_results?}
//
// Engine: PCRE2 with JIT (chosen by measurement: bench/README.md), compiled
// once and shared read-only by the walker's threads; each worker owns its
// match data, match context and JIT stack. Without JIT the interpreter runs
// with match and depth limits, and the JIT honours the match limit, so a
// catastrophic pattern ends with an error instead of hanging.
//
// Files are searched as whole buffers (read(2) into a per-worker buffer, or
// mmap for large files), not line by line: find a match, find its line, make
// sure the match lies within that line (a match spanning '\n' is re-run on
// the line alone), record it, resume at the next line. Output is sorted by
// path; memory for kept output is bounded by max_results (the results whose
// paths sort last are dropped as soon as the cap is covered).
#define PCRE2_CODE_UNIT_WIDTH 8
#include <fcntl.h>
#include <pcre2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/utf8.hpp"
#include "loopr-tool/arguments.hpp"
#include "loopr-tool/binary_detection.hpp"
#include "common/glob_pattern.hpp"
#include "loopr-tool/tools.hpp"
#include "loopr-tool/tree_walker.hpp"

namespace loopr::tool {
namespace {

constexpr std::size_t kMaxLineChars = 2000;
constexpr std::size_t kMmapThreshold = 16u << 20;
constexpr std::uint32_t kMatchLimit = 10'000'000;
constexpr std::uint32_t kDepthLimit = 100'000;
constexpr std::size_t kJitStackMax = 4u << 20;
constexpr std::int64_t kDefaultContentResults = 500;
constexpr std::int64_t kDefaultFileResults = 1000;

enum class Mode { content, files, count };

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
struct MatchContextDeleter {
  void operator()(pcre2_match_context* context) const { pcre2_match_context_free(context); }
};
struct JitStackDeleter {
  void operator()(pcre2_jit_stack* stack) const { pcre2_jit_stack_free(stack); }
};

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  const int n = pcre2_get_error_message(code, buffer, sizeof buffer);
  if (n < 0) return "PCRE2 error " + std::to_string(code);
  return std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
}

// UTF mode costs speed; it is only needed when the pattern itself speaks of
// non-ASCII characters. PCRE2_MATCH_INVALID_UTF keeps invalid bytes in files
// from being errors.
bool pattern_needs_utf(std::string_view pattern) {
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (static_cast<unsigned char>(pattern[i]) >= 0x80) return true;
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 'p' || next == 'P' || next == 'X') return true;
    }
  }
  return false;
}

constexpr std::size_t kMinPrefilterBytes = 3;

// The longest run of literal bytes that every match of `pattern` must
// contain, read conservatively: only top-level characters outside groups and
// classes, none when the pattern has a top-level '|', inline options "(?",
// \Q...\E, or is case-insensitive with letters in the run. "" when there is
// no such run of kMinPrefilterBytes, or when the pattern is all literal (the
// JIT's own literal scan is faster than memmem then).
std::string find_required_literal(std::string_view pattern, bool case_insensitive) {
  if (pattern.find("(?") != std::string_view::npos ||
      pattern.find("\\Q") != std::string_view::npos) {
    return {};
  }
  std::string best, run;
  bool last_literal = false;  // the last atom was a literal byte of `run`
  bool all_literal = true;
  int depth = 0;
  auto is_alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  auto finish = [&] {
    if (run.size() > best.size()) best = run;
    run.clear();
    last_literal = false;
  };
  auto drop_last_char = [&] {  // the last atom became optional
    while (!run.empty() && (static_cast<unsigned char>(run.back()) & 0xC0) == 0x80)
      run.pop_back();
    if (!run.empty()) run.pop_back();
  };
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      ++i;
      if (!is_alnum(next) && static_cast<unsigned char>(next) < 0x80) {
        if (depth == 0) {
          run += next;
          last_literal = true;
        }
        all_literal = false;
        continue;
      }
      // \d, \x{41}, \1, \p{L}...: not literal; skip its arguments too.
      all_literal = false;
      while (i + 1 < pattern.size() && is_alnum(pattern[i + 1]))
        ++i;
      if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
        const std::size_t close = pattern.find('}', i + 1);
        if (close == std::string_view::npos) return {};
        i = close;
      }
      if (depth == 0) finish();
      continue;
    }
    switch (c) {
      case '(':
        all_literal = false;
        if (depth++ == 0) finish();
        continue;
      case ')':
        all_literal = false;
        if (depth > 0) --depth;
        continue;
      case '[': {
        all_literal = false;
        std::size_t j = i + 1;
        if (j < pattern.size() && pattern[j] == '^') ++j;
        if (j < pattern.size() && pattern[j] == ']') ++j;
        for (; j < pattern.size() && pattern[j] != ']'; ++j) {
          if (pattern[j] == '\\') {
            ++j;
          } else if (pattern[j] == '[' && j + 1 < pattern.size() && pattern[j + 1] == ':') {
            const std::size_t close = pattern.find(":]", j + 2);
            if (close == std::string_view::npos) return {};
            j = close + 1;
          }
        }
        if (j >= pattern.size()) return {};
        i = j;
        if (depth == 0) finish();
        continue;
      }
      case '|':
        all_literal = false;
        if (depth == 0) return {};
        continue;
      case '?':
      case '*':
      case '{':
        all_literal = false;
        if (depth == 0) {
          if (last_literal) drop_last_char();
          finish();
        }
        if (c == '{') {
          const std::size_t close = pattern.find('}', i);
          if (close == std::string_view::npos) return {};
          i = close;
        }
        continue;
      case '+':
      case '.':
      case '^':
      case '$':
        all_literal = false;
        if (depth == 0) finish();
        continue;
      default:
        if (depth == 0) {
          run += c;
          last_literal = true;
        }
    }
  }
  finish();
  if (all_literal || best.size() < kMinPrefilterBytes) return {};
  if (case_insensitive) {
    for (char c : best) {
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          static_cast<unsigned char>(c) >= 0x80) {
        return {};
      }
    }
  }
  return best;
}

// A rough rank of how often a byte occurs in source code and prose (lower is
// rarer). The prefilter memchr()s for the literal's rarest byte: few false
// hits, and memchr runs at memory speed where memmem on a short needle does not.
int byte_frequency(unsigned char c) {
  static constexpr std::string_view kCommon = " \netaoinsrhldcum";
  if (kCommon.find(static_cast<char>(c)) != std::string_view::npos) return 250;
  if (c >= 'a' && c <= 'z') return 200;
  if ((c >= '0' && c <= '9') ||
      std::string_view("_(),;.*/=-\t").find(static_cast<char>(c)) != std::string_view::npos) {
    return 150;
  }
  if (std::string_view("JKQVXZ").find(static_cast<char>(c)) != std::string_view::npos) return 60;
  if (c >= 'A' && c <= 'Z') return 100;
  if (c >= 0x80) return 50;
  return 80;
}

std::size_t rarest_byte(std::string_view literal) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < literal.size(); ++i) {
    if (byte_frequency(static_cast<unsigned char>(literal[i])) <
        byte_frequency(static_cast<unsigned char>(literal[best]))) {
      best = i;
    }
  }
  return best;
}

// The first occurrence of `literal` in buffer[pos, length), found by
// memchr() for its byte at `rare` and memcmp() around it; npos if none.
std::size_t find_literal(const char* buffer, std::size_t length, std::size_t pos,
                         std::string_view literal, std::size_t rare) {
  const char needle = literal[rare];
  std::size_t from = pos + rare;
  while (from < length) {
    const void* hit = std::memchr(buffer + from, needle, length - from);
    if (hit == nullptr) return std::string_view::npos;
    const auto at = static_cast<std::size_t>(static_cast<const char*>(hit) - buffer);
    const std::size_t start = at - rare;
    if (start + literal.size() <= length &&
        std::memcmp(buffer + start, literal.data(), literal.size()) == 0) {
      return start;
    }
    from = at + 1;
  }
  return std::string_view::npos;
}

// The compiled pattern. Immutable after compile(); shared by all workers.
class Regex {
 public:
  static Result<Regex> compile(const std::string& pattern, bool case_insensitive) {
    std::uint32_t options = PCRE2_MULTILINE;
    if (case_insensitive) options |= PCRE2_CASELESS;
    if (pattern_needs_utf(pattern)) options |= PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     options, &error, &offset, nullptr);
    if (code == nullptr) {
      return make_error(errc::invalid_arguments,
                        "grep: invalid regular expression at offset " + std::to_string(offset) +
                            ": " + pcre2_message(error),
                        "fix the pattern (PCRE2 syntax); to search for text literally, escape "
                        "metacharacters such as ( ) [ ] { } . * + ? | \\ with a backslash");
    }
    Regex regex;
    regex.code_.reset(code);
    regex.jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    regex.literal_ = find_required_literal(pattern, case_insensitive);
    regex.rare_ = rarest_byte(regex.literal_);
    return regex;
  }
  const pcre2_code* code() const { return code_.get(); }
  // A byte string every match contains, for the memmem prefilter; "" if none.
  const std::string& required_literal() const { return literal_; }
  // Index in required_literal() of the byte the prefilter scans for.
  std::size_t rare_index() const { return rare_; }
  bool jit() const { return jit_; }

 private:
  std::unique_ptr<pcre2_code, CodeDeleter> code_;
  bool jit_ = false;
  std::string literal_;
  std::size_t rare_ = 0;
};

// One worker's matching state. Used by one thread at a time.
class Matcher {
 public:
  explicit Matcher(const Regex& regex) : regex_(&regex) {
    data_.reset(pcre2_match_data_create_from_pattern(regex.code(), nullptr));
    context_.reset(pcre2_match_context_create(nullptr));
    pcre2_set_match_limit(context_.get(), kMatchLimit);
    pcre2_set_depth_limit(context_.get(), kDepthLimit);
    if (regex.jit()) {
      stack_.reset(pcre2_jit_stack_create(32 * 1024, kJitStackMax, nullptr));
      pcre2_jit_stack_assign(context_.get(), nullptr, stack_.get());
    }
  }

  // Searches subject[0, length) from `start`. Returns true and the match's
  // [begin, end) on a match, false on no match; a resource limit or another
  // PCRE2 error is returned through `failure`.
  bool find(const char* subject, std::size_t length, std::size_t start, std::size_t& begin,
            std::size_t& end, int& failure) {
    const auto* s = reinterpret_cast<PCRE2_SPTR>(subject);
    const int rc =
        regex_->jit()
            ? pcre2_jit_match(regex_->code(), s, length, start, 0, data_.get(), context_.get())
            : pcre2_match(regex_->code(), s, length, start, 0, data_.get(), context_.get());
    if (rc == PCRE2_ERROR_NOMATCH) return false;
    if (rc < 0) {
      failure = rc;
      return false;
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data_.get());
    begin = ovector[0];
    end = std::max(ovector[1], ovector[0]);  // \K can put the end first
    return true;
  }

 private:
  const Regex* regex_;
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> data_;
  std::unique_ptr<pcre2_match_context, MatchContextDeleter> context_;
  std::unique_ptr<pcre2_jit_stack, JitStackDeleter> stack_;
};

struct OutputLine {
  std::uint64_t number;
  bool is_match;
  std::string text;  // display form: lossy UTF-8, cut at kMaxLineChars
};

struct FileResult {
  std::string path;
  std::uint64_t count = 0;        // matching lines
  std::uint64_t recorded = 0;     // matching lines kept in `lines`
  std::vector<OutputLine> lines;  // content mode: matches and context, by number
};

std::string display_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > kMaxLineChars) {
    return to_lossy_utf8(line.substr(0, utf8_safe_prefix(line, kMaxLineChars))) + "...";
  }
  if (is_valid_utf8(line)) return std::string(line);
  return to_lossy_utf8(line);
}

std::uint64_t count_newlines(const char* begin, const char* end) {
  std::uint64_t n = 0;
  while (begin < end) {
    const void* hit = std::memchr(begin, '\n', static_cast<std::size_t>(end - begin));
    if (hit == nullptr) break;
    ++n;
    begin = static_cast<const char*>(hit) + 1;
  }
  return n;
}

std::size_t line_end(const char* buffer, std::size_t length, std::size_t from) {
  const void* hit = std::memchr(buffer + from, '\n', length - from);
  return hit == nullptr ? length : static_cast<std::size_t>(static_cast<const char*>(hit) - buffer);
}

// Collects one file's content-mode output with `context` lines around
// matches. Lines are emitted in order, each once.
class ContentRecorder {
 public:
  ContentRecorder(const char* buffer, std::size_t length, std::uint64_t context,
                  std::vector<OutputLine>& out)
      : buffer_(buffer), length_(length), context_(context), out_(out) {}

  // A matching line [begin, end) whose number is `number`.
  void match(std::size_t begin, std::size_t end, std::uint64_t number) {
    emit_after_context(number);
    // Before-context: up to context_ lines above, none already emitted.
    std::vector<std::pair<std::size_t, std::size_t>> before;
    std::size_t start = begin;
    for (std::uint64_t k = 1; k <= context_ && number > k && number - k >= next_number_; ++k) {
      if (start == 0) break;
      const std::size_t previous_end = start - 1;
      const void* hit = previous_end == 0 ? nullptr : memrchr(buffer_, '\n', previous_end);
      const std::size_t previous_start =
          hit == nullptr ? 0
                         : static_cast<std::size_t>(static_cast<const char*>(hit) - buffer_) + 1;
      before.emplace_back(previous_start, previous_end);
      start = previous_start;
    }
    for (auto it = before.rbegin(); it != before.rend(); ++it) {
      const std::uint64_t n = number - static_cast<std::uint64_t>(before.rend() - it);
      out_.push_back({n, false, display_line({buffer_ + it->first, it->second - it->first})});
    }
    out_.push_back({number, true, display_line({buffer_ + begin, end - begin})});
    last_match_ = number;
    next_number_ = number + 1;
    next_pos_ = end < length_ ? end + 1 : length_;
  }

  // After-context of the last match, up to (not including) line `limit`.
  void emit_after_context(std::uint64_t limit) {
    if (last_match_ == 0) return;
    while (next_number_ <= last_match_ + context_ && next_number_ < limit && next_pos_ < length_) {
      const std::size_t end = line_end(buffer_, length_, next_pos_);
      out_.push_back({next_number_, false, display_line({buffer_ + next_pos_, end - next_pos_})});
      ++next_number_;
      next_pos_ = end < length_ ? end + 1 : length_;
    }
  }

 private:
  const char* buffer_;
  std::size_t length_;
  std::uint64_t context_;
  std::vector<OutputLine>& out_;
  std::uint64_t last_match_ = 0;   // 0: none yet
  std::uint64_t next_number_ = 1;  // first line not yet emitted
  std::size_t next_pos_ = 0;       // its offset
};

struct SearchSettings {
  Mode mode;
  std::uint64_t context;
  std::uint64_t cap;  // matching lines (content) or files (files, count)
};

// Searches one buffer; returns false with `failure` set on a PCRE2 error.
enum class LineSearch { found, none, failure };

// The first line at or after `pos` (a line start) holding a match that lies
// within the line: its [line_begin, line_stop) ('\n' excluded).
LineSearch next_matching_line(const char* buffer, std::size_t length, std::size_t pos,
                              Matcher& matcher, std::string_view literal, std::size_t rare,
                              std::size_t& line_begin, std::size_t& line_stop, int& failure) {
  std::size_t begin = 0, end = 0;
  if (!literal.empty()) {
    // Prefilter: only lines holding the required literal can match.
    while (pos < length) {
      const std::size_t at = find_literal(buffer, length, pos, literal, rare);
      if (at == std::string_view::npos) return LineSearch::none;
      const void* newline = at == pos ? nullptr : memrchr(buffer + pos, '\n', at - pos);
      line_begin = newline == nullptr
                       ? pos
                       : static_cast<std::size_t>(static_cast<const char*>(newline) - buffer) + 1;
      line_stop = line_end(buffer, length, at);
      if (matcher.find(buffer, line_stop, line_begin, begin, end, failure))
        return LineSearch::found;
      if (failure != 0) return LineSearch::failure;
      pos = line_stop + 1;
    }
    return LineSearch::none;
  }
  while (pos <= length) {
    if (!matcher.find(buffer, length, pos, begin, end, failure)) {
      return failure != 0 ? LineSearch::failure : LineSearch::none;
    }
    // A match at the very end of a file that ends in '\n' is on no line.
    if (begin >= length && (length == 0 || buffer[length - 1] == '\n')) return LineSearch::none;
    const void* newline = begin == pos ? nullptr : memrchr(buffer + pos, '\n', begin - pos);
    line_begin = newline == nullptr
                     ? pos
                     : static_cast<std::size_t>(static_cast<const char*>(newline) - buffer) + 1;
    line_stop = line_end(buffer, length, begin);
    if (end <= line_stop) return LineSearch::found;
    // The match spans a newline: does the line alone match?
    if (matcher.find(buffer, line_stop, line_begin, begin, end, failure)) return LineSearch::found;
    if (failure != 0) return LineSearch::failure;
    pos = line_stop + 1;
  }
  return LineSearch::none;
}

// Searches one buffer; returns false with `failure` set on a PCRE2 error.
bool search_buffer(const char* buffer, std::size_t length, Matcher& matcher,
                   std::string_view literal, std::size_t rare, const SearchSettings& settings,
                   FileResult& result, int& failure) {
  std::optional<ContentRecorder> recorder;
  if (settings.mode == Mode::content)
    recorder.emplace(buffer, length, settings.context, result.lines);
  std::size_t counted_pos = 0;
  std::uint64_t counted_line = 1;
  std::size_t pos = 0;
  while (pos <= length) {
    std::size_t line_begin = 0, line_stop = 0;
    const LineSearch found = next_matching_line(buffer, length, pos, matcher, literal, rare,
                                                line_begin, line_stop, failure);
    if (found == LineSearch::failure) return false;
    if (found == LineSearch::none) break;
    ++result.count;
    if (settings.mode == Mode::files) return true;
    if (recorder && result.recorded < settings.cap) {
      counted_line += count_newlines(buffer + counted_pos, buffer + line_begin);
      counted_pos = line_begin;
      recorder->match(line_begin, line_stop, counted_line);
      ++result.recorded;
      if (result.recorded == settings.cap) recorder->emit_after_context(UINT64_MAX);
    }
    if (line_stop >= length) break;
    pos = line_stop + 1;
  }
  if (recorder && result.recorded < settings.cap) recorder->emit_after_context(UINT64_MAX);
  return true;
}

// Reads a whole regular file into a worker's buffer, or maps it.
class FileBuffer {
 public:
  ~FileBuffer() { unmap(); }

  // `fd` borrowed. Returns false if the file cannot be read.
  bool load(int fd, std::size_t size_hint) {
    unmap();
    if (size_hint >= kMmapThreshold) {
      void* mapped = ::mmap(nullptr, size_hint, PROT_READ, MAP_PRIVATE, fd, 0);
      if (mapped != MAP_FAILED) {
        ::madvise(mapped, size_hint, MADV_SEQUENTIAL);
        mapped_ = mapped;
        mapped_size_ = size_hint;
        data_ = static_cast<const char*>(mapped);
        size_ = size_hint;
        return true;
      }
    }
    if (storage_.size() < size_hint + 1) storage_.resize(size_hint + 1);
    std::size_t done = 0;
    for (;;) {
      if (done == storage_.size()) storage_.resize(storage_.size() * 2);
      const ssize_t n = ::read(fd, storage_.data() + done, storage_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return false;
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
      // The size fstat saw is what is searched (no second read to see EOF);
      // a file that reports size 0 (or grows) is read to EOF, at most
      // kMmapThreshold bytes more.
      if (done == size_hint) break;
      if (done > size_hint && done >= kMmapThreshold) break;
    }
    data_ = storage_.data();
    size_ = done;
    return true;
  }
  const char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  void unmap() {
    if (mapped_ != nullptr) ::munmap(mapped_, mapped_size_);
    mapped_ = nullptr;
  }
  std::vector<char> storage_;
  void* mapped_ = nullptr;
  std::size_t mapped_size_ = 0;
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};

// Keeps the results that sort first by path, enough to cover the cap.
// Thread-safe.
class Retained {
 public:
  explicit Retained(Mode mode, std::uint64_t cap) : mode_(mode), cap_(cap) {}

  void add(FileResult result) {
    const std::uint64_t weight = mode_ == Mode::content ? result.recorded : 1;
    std::lock_guard lock(mutex_);
    if (covered_ >= cap_ && !kept_.empty() && result.path > kept_.rbegin()->first) return;
    covered_ += weight;
    std::string key = result.path;
    kept_.emplace(std::move(key), std::move(result));
    while (!kept_.empty()) {
      auto last = std::prev(kept_.end());
      const std::uint64_t last_weight = mode_ == Mode::content ? last->second.recorded : 1;
      if (covered_ - last_weight < cap_) break;
      covered_ -= last_weight;
      kept_.erase(last);
    }
  }
  // Call after all workers have finished.
  std::map<std::string, FileResult>& kept() { return kept_; }

 private:
  Mode mode_;
  std::uint64_t cap_;
  std::mutex mutex_;
  std::map<std::string, FileResult> kept_;  // guarded by mutex_
  std::uint64_t covered_ = 0;               // guarded by mutex_
};

struct Totals {
  std::atomic<std::uint64_t> matches{0};
  std::atomic<std::uint64_t> files_matched{0};
  std::atomic<std::uint64_t> files_searched{0};
  std::atomic<std::uint64_t> skipped_binary{0};
};

Error limit_error(int code, std::string_view path) {
  const bool limit = code == PCRE2_ERROR_MATCHLIMIT || code == PCRE2_ERROR_DEPTHLIMIT ||
                     code == PCRE2_ERROR_HEAPLIMIT || code == PCRE2_ERROR_JIT_STACKLIMIT;
  if (limit) {
    return make_error(errc::invalid_arguments,
                      "grep: the pattern backtracks too much on '" + std::string(path) + "' (" +
                          pcre2_message(code) + "); the search was stopped",
                      "simplify the pattern: avoid nested or adjacent unbounded quantifiers "
                      "such as (a+)+ or (.*)*, anchor it, or use a more specific literal");
  }
  return make_error(errc::internal,
                    "grep: matching failed on '" + std::string(path) + "': " + pcre2_message(code),
                    "try a simpler pattern");
}

std::string render_content(std::map<std::string, FileResult>& kept, std::uint64_t cap,
                           std::uint64_t context) {
  std::string out;
  std::uint64_t remaining = cap;
  bool first_group = true;
  for (auto& [path, file] : kept) {
    if (remaining == 0) break;
    const std::uint64_t take = std::min(remaining, file.recorded);
    remaining -= take;
    std::uint64_t seen = 0, limit = UINT64_MAX, previous = 0;
    for (const OutputLine& line : file.lines) {
      if (line.is_match && ++seen == take) limit = line.number + context;
      if (line.number > limit) break;
      if (context > 0 && (previous == 0 ? !first_group : line.number > previous + 1)) {
        out += "--\n";
      }
      out += path;
      out += line.is_match ? ':' : '-';
      out += std::to_string(line.number);
      out += line.is_match ? ':' : '-';
      out += line.text;
      out += '\n';
      previous = line.number;
      first_group = false;
    }
  }
  return out;
}

}  // namespace

Result<Json> grep(const Worktree& worktree, const Json& args) {
  auto parsed = Arguments::parse(args, "grep",
                                 {"pattern", "path", "file_pattern", "context", "case_insensitive",
                                  "output_mode", "max_results"});
  if (!parsed) return std::move(parsed).error();
  auto pattern = parsed->required_string("pattern");
  if (!pattern) return std::move(pattern).error();
  auto path_argument = parsed->string_or("path", ".");
  if (!path_argument) return std::move(path_argument).error();
  auto file_pattern_text = parsed->optional_string("file_pattern");
  if (!file_pattern_text) return std::move(file_pattern_text).error();
  auto context = parsed->integer_or("context", 0, 0, 20);
  if (!context) return std::move(context).error();
  auto case_insensitive = parsed->boolean_or("case_insensitive", false);
  if (!case_insensitive) return std::move(case_insensitive).error();
  auto mode_name = parsed->choice_or("output_mode", "content", {"content", "files", "count"});
  if (!mode_name) return std::move(mode_name).error();
  const Mode mode = *mode_name == "files"   ? Mode::files
                    : *mode_name == "count" ? Mode::count
                                            : Mode::content;
  auto max_results = parsed->integer_or(
      "max_results", mode == Mode::content ? kDefaultContentResults : kDefaultFileResults, 1,
      10000);
  if (!max_results) return std::move(max_results).error();

  std::optional<GlobPattern> file_pattern;
  bool file_pattern_on_path = false;
  if (*file_pattern_text) {
    auto compiled = GlobPattern::compile(**file_pattern_text);
    if (!compiled) return std::move(compiled).error();
    file_pattern = std::move(*compiled);
    file_pattern_on_path = (*file_pattern_text)->find('/') != std::string::npos;
  }
  auto regex = Regex::compile(*pattern, *case_insensitive);
  if (!regex) return std::move(regex).error();

  auto base = worktree.relative(*path_argument);
  if (!base) return std::move(base).error();
  auto target = worktree.open(*base, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (!target) return std::move(target).error();
  struct stat target_stat {};
  if (::fstat(target->get(), &target_stat) != 0) return errno_error(errno, "cannot stat", *base);
  if (!S_ISDIR(target_stat.st_mode) && !S_ISREG(target_stat.st_mode)) {
    return make_error(errc::invalid_arguments,
                      "grep: '" + *base + "' is neither a regular file nor a directory",
                      "give a file or a directory inside the worktree");
  }

  const SearchSettings settings{mode, static_cast<std::uint64_t>(*context),
                                static_cast<std::uint64_t>(*max_results)};
  const unsigned threads = S_ISDIR(target_stat.st_mode) ? default_walk_threads() : 1;
  std::vector<Matcher> matchers;
  std::vector<FileBuffer> buffers(threads);
  for (unsigned i = 0; i < threads; ++i)
    matchers.emplace_back(*regex);
  Retained retained(mode, settings.cap);
  Totals totals;
  std::atomic<bool> stop{false};
  std::mutex failure_mutex;
  std::optional<Error> failure;  // guarded by failure_mutex

  auto search_fd = [&](int fd, std::string_view relative, unsigned worker) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    FileBuffer& buffer = buffers[worker];
    if (!buffer.load(fd, static_cast<std::size_t>(st.st_size))) return;
    const std::string_view data(buffer.data(), buffer.size());
    if (looks_binary(data)) {
      totals.skipped_binary.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    totals.files_searched.fetch_add(1, std::memory_order_relaxed);
    FileResult result;
    int code = 0;
    if (!search_buffer(data.data(), data.size(), matchers[worker], regex->required_literal(),
                       regex->rare_index(), settings, result, code)) {
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = limit_error(code, relative);
      stop = true;
      return;
    }
    if (result.count == 0) return;
    totals.matches.fetch_add(result.count, std::memory_order_relaxed);
    totals.files_matched.fetch_add(1, std::memory_order_relaxed);
    result.path = std::string(relative);
    retained.add(std::move(result));
  };

  WalkStats stats;
  if (S_ISREG(target_stat.st_mode)) {
    search_fd(target->get(), *base, 0);
  } else {
    target->reset();
    const std::size_t prefix = *base == "." ? 0 : base->size() + 1;
    auto walked = walk_tree(
        worktree, *base, WalkOptions{threads, kMaxWalkDepth, true},
        [&](const WalkEntry& entry, unsigned worker) {
          if (file_pattern) {
            const std::string_view subject =
                file_pattern_on_path ? entry.relative.substr(prefix) : entry.name;
            if (!file_pattern->match(subject)) return;
          }
          const std::string name(entry.name);
          UniqueFd fd(::openat(entry.dir_fd, name.c_str(),
                               O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
          if (!fd) return;
          search_fd(fd.get(), entry.relative, worker);
        },
        &stop);
    if (!walked) return std::move(walked).error();
    stats = *walked;
  }
  if (failure) return std::move(*failure);

  auto& kept = retained.kept();
  const std::uint64_t files_matched = totals.files_matched.load();
  const std::uint64_t match_count = totals.matches.load();
  const bool truncated =
      mode == Mode::content ? match_count > settings.cap : files_matched > settings.cap;

  Json result = {{"pattern", *pattern}, {"mode", *mode_name}};
  switch (mode) {
    case Mode::content:
      result["content"] = render_content(kept, settings.cap, settings.context);
      break;
    case Mode::files: {
      Json files = Json::array();
      for (const auto& [path, file] : kept) {
        if (files.size() >= settings.cap) break;
        files.push_back(path);
      }
      result["files"] = std::move(files);
      break;
    }
    case Mode::count: {
      Json counts = Json::array();
      for (const auto& [path, file] : kept) {
        if (counts.size() >= settings.cap) break;
        counts.push_back({{"path", path}, {"count", file.count}});
      }
      result["counts"] = std::move(counts);
      break;
    }
  }
  // In files mode each file stops at its first match, so there is no line total.
  if (mode != Mode::files) result["match_count"] = match_count;
  result["files_matched"] = files_matched;
  result["files_searched"] = totals.files_searched.load();
  result["truncated"] = truncated;
  result["skipped_binary"] = totals.skipped_binary.load();
  result["skipped_symlinks"] = stats.skipped_symlinks;
  if (truncated) {
    result["hint"] = "output was cut at max_results=" + std::to_string(settings.cap) +
                     (mode == Mode::content ? " matching lines" : " files") + " of " +
                     std::to_string(mode == Mode::content ? match_count : files_matched) +
                     "; narrow the search with a deeper path, a file_pattern (e.g. \"*.cpp\"), "
                     "a more specific pattern, or output_mode \"files\"/\"count\" for an overview";
  } else if (totals.skipped_binary.load() > 0 && files_matched == 0) {
    result["hint"] = std::to_string(totals.skipped_binary.load()) +
                     " binary files were not searched; grep only searches text files";
  }
  return result;
}

}  // namespace loopr::tool
