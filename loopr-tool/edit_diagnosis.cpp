#include "loopr-tool/edit_diagnosis.hpp"

#include <string.h>  // memmem (GNU)

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "common/utf8.hpp"

namespace loopr::tool {
namespace {

constexpr std::size_t kAnchors = 3;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

// Calls fn(index, line) for each line of `text` (without its '\n'); a final
// '\n' does not start another line. Stops early when fn returns false.
template <class Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  std::size_t start = 0;
  std::size_t index = 0;
  while (start < text.size()) {
    const std::size_t newline = text.find('\n', start);
    const std::size_t end = newline == std::string_view::npos ? text.size() : newline;
    if (!fn(index++, text.substr(start, end - start))) return;
    start = end + 1;
  }
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for_each_line(text, [&](std::size_t, std::string_view line) {
    lines.push_back(line);
    return true;
  });
  return lines;
}

// The non-whitespace bytes of `line`, at most max_bytes of them.
std::string squash(std::string_view line, std::size_t max_bytes = kComparedLineBytes) {
  std::string out;
  for (char c : line) {
    if (out.size() >= max_bytes) break;
    if (!is_space(c)) out += c;
  }
  return out;
}

std::uint32_t trigram_code(unsigned char a, unsigned char b, unsigned char c) {
  return (std::uint32_t{a} << 16) | (std::uint32_t{b} << 8) | c;
}

// The distinct trigrams of a squashed line, sorted.
std::vector<std::uint32_t> trigrams(std::string_view squashed) {
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i + 2 < squashed.size(); ++i) {
    out.push_back(trigram_code(static_cast<unsigned char>(squashed[i]),
                               static_cast<unsigned char>(squashed[i + 1]),
                               static_cast<unsigned char>(squashed[i + 2])));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// A line of `wanted`, prepared for comparison. A fragment (the first or last
// line of a multi-line string, or the only line) may be part of a file line,
// so it is scored by how much of it the file line contains; a whole line is
// scored by the overlap of both (Dice).
struct WantedLine {
  std::string squashed;
  std::vector<std::uint32_t> grams;
  bool fragment = false;
};

bool short_line(std::string_view squashed) {
  return squashed.size() < 3;
}

// How much of the two lines' non-whitespace text agrees from the front and
// from the back, over the longer one: catches a typo in a short line, which
// changes most of its few trigrams. No allocation; stops at the first
// difference from either end.
double affix_similarity(std::string_view file_line, std::string_view squashed) {
  std::size_t length = 0;
  for (char c : file_line)
    if (!is_space(c)) ++length;
  const std::size_t longer = std::max(length, squashed.size());
  if (longer == 0) return 1.0;
  std::size_t front = 0;
  for (std::size_t i = 0; i < file_line.size() && front < squashed.size(); ++i) {
    if (is_space(file_line[i])) continue;
    if (file_line[i] != squashed[front]) break;
    ++front;
  }
  std::size_t back = 0;
  for (std::size_t i = file_line.size(); i-- > 0 && back < squashed.size();) {
    if (is_space(file_line[i])) continue;
    if (file_line[i] != squashed[squashed.size() - 1 - back]) break;
    ++back;
  }
  const std::size_t agreed = std::min(front + back, std::min(length, squashed.size()));
  return static_cast<double>(agreed) / static_cast<double>(longer);
}

double trigram_similarity(std::string_view file_line, const WantedLine& wanted) {
  const std::string found = squash(file_line);
  if (short_line(wanted.squashed) || short_line(found)) {
    if (wanted.fragment) {
      return found.find(wanted.squashed) != std::string::npos ? 1.0 : 0.0;
    }
    return found == wanted.squashed ? 1.0 : 0.0;
  }
  const std::vector<std::uint32_t> grams = trigrams(found);
  std::size_t common = 0;
  auto a = grams.begin();
  auto b = wanted.grams.begin();
  while (a != grams.end() && b != wanted.grams.end()) {
    if (*a < *b) {
      ++a;
    } else if (*b < *a) {
      ++b;
    } else {
      ++common, ++a, ++b;
    }
  }
  const auto shared = static_cast<double>(common);
  if (wanted.fragment) return shared / static_cast<double>(wanted.grams.size());
  return 2.0 * shared / static_cast<double>(grams.size() + wanted.grams.size());
}

// Exact similarity of a file line to a wanted line, 0..1.
double line_similarity(std::string_view file_line, const WantedLine& wanted) {
  return std::max(trigram_similarity(file_line.substr(0, kComparedLineBytes), wanted),
                  affix_similarity(file_line.substr(0, kComparedLineBytes), wanted.squashed));
}

// A distinctive line of `wanted` used to rank windows in one cheap pass: its
// trigrams hashed into a 64 Ki-slot table, so scoring a file line costs one
// lookup per byte. Each trigram counts once per line, so a line repeating a
// common word does not outscore the line that has all of `wanted`'s text.
class Anchor {
 public:
  Anchor(std::size_t index, const WantedLine& line) : index_(index), line_(&line) {
    for (std::size_t i = 0; i < line.grams.size(); ++i) {
      slots_[slot(line.grams[i])] = static_cast<std::uint16_t>(i + 1);
    }
    counted_.assign(line.grams.size(), 0);
  }

  std::size_t index() const { return index_; }

  // Approximately line_similarity(): two trigrams whose hashes collide count
  // as one, which only affects how windows are ranked for exact scoring.
  double score(std::string_view file_line) {
    if (short_line(line_->squashed)) return line_similarity(file_line, *line_);
    ++generation_;
    std::size_t hits = 0;
    std::size_t total = 0;
    unsigned char a = 0;
    unsigned char b = 0;
    std::size_t seen = 0;
    for (char ch : file_line) {
      if (is_space(ch)) continue;
      const auto c = static_cast<unsigned char>(ch);
      if (++seen >= 3) {
        ++total;
        const std::uint16_t at = slots_[slot(trigram_code(a, b, c))];
        if (at != 0 && counted_[at - 1] != generation_) {
          counted_[at - 1] = generation_;
          ++hits;
        }
      }
      a = b;
      b = c;
    }
    const auto wanted = static_cast<double>(line_->grams.size());
    const auto shared = static_cast<double>(hits);
    const double affix = affix_similarity(file_line, line_->squashed);
    if (line_->fragment) return std::max(shared / wanted, affix);
    return std::max(total == 0 ? 0.0 : 2.0 * shared / (static_cast<double>(total) + wanted), affix);
  }

 private:
  static std::size_t slot(std::uint32_t code) { return (code * 2654435761u) >> 16; }

  std::size_t index_;  // line of `wanted`
  const WantedLine* line_;
  // Hash slot -> 1 + the trigram's index in line_->grams (0: none). Fewer
  // than kComparedLineBytes trigrams, so an index fits 16 bits.
  std::vector<std::uint16_t> slots_ = std::vector<std::uint16_t>(65536, 0);
  std::vector<std::size_t> counted_;  // == generation_ once counted for this line
  std::size_t generation_ = 0;
};

// The best `limit` (score, start) pairs seen; ties keep the earlier start.
class TopStarts {
 public:
  explicit TopStarts(std::size_t limit) : limit_(limit) {}

  void offer(double score, std::size_t start) {
    if (score <= 0) return;
    if (kept_.size() < limit_) {
      kept_.push_back({score, start});
      return;
    }
    auto worst = std::min_element(kept_.begin(), kept_.end(),
                                  [](const auto& x, const auto& y) { return x.first < y.first; });
    if (score > worst->first) *worst = {score, start};
  }

  std::vector<std::size_t> starts() const {
    std::vector<std::size_t> out;
    for (const auto& [score, start] : kept_)
      out.push_back(start);
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::size_t limit_;
  std::vector<std::pair<double, std::size_t>> kept_;
};

std::string count_of(std::size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// "2 spaces", "1 tab and 4 spaces", "a carriage return", "nothing".
std::string describe_whitespace(std::string_view run) {
  const auto spaces = static_cast<std::size_t>(std::count(run.begin(), run.end(), ' '));
  const auto tabs = static_cast<std::size_t>(std::count(run.begin(), run.end(), '\t'));
  const auto returns = static_cast<std::size_t>(std::count(run.begin(), run.end(), '\r'));
  std::vector<std::string> parts;
  if (tabs > 0) parts.push_back(count_of(tabs, "tab", "tabs"));
  if (spaces > 0) parts.push_back(count_of(spaces, "space", "spaces"));
  if (returns > 0)
    parts.push_back(count_of(returns, "carriage return (␍)", "carriage returns (␍)"));
  if (parts.empty()) return "nothing";
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += i + 1 == parts.size() ? " and " : ", ";
    out += parts[i];
  }
  return out;
}

std::string_view leading_space(std::string_view line) {
  std::size_t n = 0;
  while (n < line.size() && is_space(line[n]))
    ++n;
  return line.substr(0, n);
}

std::string_view trailing_space(std::string_view line) {
  std::size_t n = line.size();
  while (n > 0 && is_space(line[n - 1]))
    --n;
  return line.substr(n);
}

// Text for a message: cut to 60 bytes, whitespace visible, valid UTF-8.
std::string in_quotes(std::string_view text) {
  constexpr std::size_t kShown = 60;
  std::string cut(text.substr(0, utf8_safe_prefix(text, kShown)));
  std::string out = "«" + to_lossy_utf8(show_whitespace(cut));
  if (cut.size() < text.size()) out += "...";
  return out + "»";
}

enum class LineDiff { same, whitespace, content };

LineDiff compare_line(std::string_view found, std::string_view wanted, bool first, bool last) {
  if (found == wanted) return LineDiff::same;
  const bool starts_inside = first && !last;  // wanted may begin mid-line
  const bool ends_inside = last && !first;    // wanted may stop mid-line
  const bool inside = first && last;          // a one-line wanted: anywhere in the line
  if ((starts_inside && found.ends_with(wanted)) || (ends_inside && found.starts_with(wanted)) ||
      (inside && found.find(wanted) != std::string_view::npos)) {
    return LineDiff::same;
  }
  const std::string f = squash(found, found.size());
  const std::string w = squash(wanted, wanted.size());
  if (f == w || (starts_inside && f.ends_with(w)) || (ends_inside && f.starts_with(w)) ||
      (inside && f.find(w) != std::string::npos)) {
    return LineDiff::whitespace;
  }
  return LineDiff::content;
}

std::size_t common_prefix(std::string_view a, std::string_view b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n])
    ++n;
  return n;
}

std::size_t common_suffix(std::string_view a, std::string_view b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[a.size() - 1 - n] == b[b.size() - 1 - n])
    ++n;
  return n;
}

bool utf8_continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// The first differing text of a line on both sides, with a few bytes of the
// text they share around it. `wanted` may start inside `found` (it is the
// first line of old_string) or end inside it (the last line), so it is first
// aligned where it agrees with `found` the longest.
std::string describe_content_difference(std::string_view found, std::string_view wanted,
                                        bool starts_inside, bool ends_inside,
                                        std::size_t line_number) {
  constexpr std::size_t kContext = 8;
  constexpr std::size_t kAlignLimit = 2048;  // bounds the alignment search
  // Indentation and trailing spaces show in the visible text already; the
  // words are compared without them, so they cannot throw the alignment off.
  const auto trim = [](std::string_view text) {
    const std::size_t lead = leading_space(text).size();
    text.remove_prefix(lead);
    text.remove_suffix(trailing_space(text).size());
    return text.substr(0, kComparedLineBytes);
  };
  found = trim(found);
  wanted = trim(wanted);
  if (starts_inside) {
    std::size_t best_at = 0;
    std::size_t best = common_prefix(found, wanted);
    for (std::size_t at = 1; at < found.size() && at < kAlignLimit; ++at) {
      const std::size_t n = common_prefix(found.substr(at), wanted);
      if (n > best) best = n, best_at = at;
    }
    found.remove_prefix(best_at);
  }
  const std::size_t prefix = common_prefix(found, wanted);
  std::string_view rest_found = found.substr(prefix);
  const std::string_view rest_wanted = wanted.substr(prefix);
  if (ends_inside) {
    std::size_t best_end = rest_found.size();
    std::size_t best = common_suffix(rest_found, rest_wanted);
    for (std::size_t end = rest_found.size(); end-- > 0 && rest_found.size() - end < kAlignLimit;) {
      const std::size_t n = common_suffix(rest_found.substr(0, end), rest_wanted);
      if (n > best) best = n, best_end = end;
    }
    rest_found = rest_found.substr(0, best_end);
  }
  const std::size_t suffix = common_suffix(rest_found, rest_wanted);
  std::size_t before = prefix > kContext ? prefix - kContext : 0;
  while (before < prefix && utf8_continuation(found[before]))
    ++before;
  const std::string_view lead = found.substr(before, prefix - before);
  std::string_view tail = rest_found.substr(rest_found.size() - suffix);
  tail = tail.substr(0, utf8_safe_prefix(tail, kContext));
  const std::string in_file = std::string(lead) +
                              std::string(rest_found.substr(0, rest_found.size() - suffix)) +
                              std::string(tail);
  const std::string in_wanted = std::string(lead) +
                                std::string(rest_wanted.substr(0, rest_wanted.size() - suffix)) +
                                std::string(tail);
  const std::string where = "line " + std::to_string(line_number) + ": ";
  if (in_file.empty())
    return where + "old_string has " + in_quotes(in_wanted) + " which the file does not";
  if (in_wanted.empty())
    return where + "the file has " + in_quotes(in_file) + " which old_string lacks";
  return where + "the file has " + in_quotes(in_file) + " where old_string has " +
         in_quotes(in_wanted);
}

std::string describe_whitespace_difference(std::string_view found, std::string_view wanted,
                                           std::size_t line_number) {
  const std::string line = "line " + std::to_string(line_number);
  const std::string_view lead_f = leading_space(found);
  const std::string_view lead_w = leading_space(wanted);
  if (lead_f != lead_w && squash(found, found.size()) == squash(wanted, wanted.size())) {
    return line + " is indented with " + describe_whitespace(lead_f) + " in the file, " +
           describe_whitespace(lead_w) + " in old_string";
  }
  const std::string_view tail_f = trailing_space(found);
  const std::string_view tail_w = trailing_space(wanted);
  if (tail_f != tail_w) {
    return line + " ends with " + describe_whitespace(tail_f) + " in the file, " +
           describe_whitespace(tail_w) + " in old_string";
  }
  return "the spacing inside " + line + " differs: the file has " + in_quotes(found) +
         ", old_string " + in_quotes(wanted);
}

// Strips read_file's "%6d|" prefix from `line`; nullopt if it has none.
std::optional<std::string_view> without_line_number(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ')
    ++i;
  const std::size_t digits_begin = i;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9')
    ++i;
  if (i == digits_begin || i - digits_begin > 10 || i >= line.size() || line[i] != '|') {
    return std::nullopt;
  }
  return line.substr(i + 1);
}

bool contains(std::string_view haystack, std::string_view needle) {
  return !find_occurrences(haystack, needle, 1, false).empty();
}

}  // namespace

std::vector<std::size_t> find_occurrences(std::string_view haystack, std::string_view needle,
                                          std::size_t limit, bool overlapping) {
  std::vector<std::size_t> found;
  if (needle.empty()) return found;
  std::size_t pos = 0;
  while (found.size() < limit && pos < haystack.size() && needle.size() <= haystack.size() - pos) {
    const void* hit =
        ::memmem(haystack.data() + pos, haystack.size() - pos, needle.data(), needle.size());
    if (hit == nullptr) break;
    const auto at = static_cast<std::size_t>(static_cast<const char*>(hit) - haystack.data());
    found.push_back(at);
    pos = at + (overlapping ? 1 : needle.size());
  }
  return found;
}

std::vector<std::size_t> line_numbers_of(std::string_view text,
                                         const std::vector<std::size_t>& sorted_offsets) {
  std::vector<std::size_t> lines;
  lines.reserve(sorted_offsets.size());
  std::size_t line = 1;
  std::size_t pos = 0;
  for (std::size_t offset : sorted_offsets) {
    const std::size_t end = std::min(offset, text.size());
    if (end > pos) {
      line += static_cast<std::size_t>(std::count(text.begin() + static_cast<std::ptrdiff_t>(pos),
                                                  text.begin() + static_cast<std::ptrdiff_t>(end),
                                                  '\n'));
      pos = end;
    }
    lines.push_back(line);
  }
  return lines;
}

std::string show_whitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  std::size_t start = 0;
  for (;;) {
    const std::size_t newline = text.find('\n', start);
    const std::size_t end = newline == std::string_view::npos ? text.size() : newline;
    const std::string_view line = text.substr(start, end - start);
    std::size_t content_end = line.size();
    while (content_end > 0 && (line[content_end - 1] == ' ' || line[content_end - 1] == '\t' ||
                               line[content_end - 1] == '\r')) {
      --content_end;
    }
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '\t') {
        out += "→";
      } else if (c == '\r') {
        out += "␍";
      } else if (c == ' ' && i >= content_end) {
        out += "·";
      } else {
        out += c;
      }
    }
    if (newline == std::string_view::npos) break;
    out += '\n';
    start = newline + 1;
  }
  return out;
}

std::string numbered_lines(std::string_view text, std::size_t first_line, std::size_t max_lines,
                           std::size_t max_line_bytes, bool visible_whitespace) {
  std::string out;
  std::size_t shown = 0;
  std::size_t total = 0;
  for_each_line(text, [&](std::size_t index, std::string_view line) {
    ++total;
    if (shown >= max_lines) return true;
    if (!visible_whitespace && line.ends_with('\r')) line.remove_suffix(1);
    const bool cut = line.size() > max_line_bytes;
    if (cut) line = line.substr(0, utf8_safe_prefix(line, max_line_bytes));
    char number[32];
    std::snprintf(number, sizeof number, "%6zu|", first_line + index);
    out += number;
    out += to_lossy_utf8(visible_whitespace ? show_whitespace(line) : std::string(line));
    if (cut) out += "...";
    out += '\n';
    ++shown;
    return true;
  });
  if (total > shown) out += "(" + count_of(total - shown, "more line", "more lines") + ")\n";
  return out;
}

std::optional<Candidate> nearest_candidate(std::string_view file, std::string_view wanted) {
  // Only the first kComparedLines lines of `wanted` are compared; the window
  // still spans all of its lines.
  const std::vector<std::string_view> wanted_lines = split_lines(wanted);
  const std::size_t span = wanted_lines.size();
  const std::size_t compared = std::min(span, kComparedLines);
  std::vector<WantedLine> lines(compared);
  bool any_text = false;
  for (std::size_t i = 0; i < compared; ++i) {
    lines[i].squashed = squash(wanted_lines[i]);
    lines[i].grams = trigrams(lines[i].squashed);
    lines[i].fragment = i == 0 || i + 1 == span;
    any_text = any_text || !lines[i].squashed.empty();
  }
  if (!any_text) return std::nullopt;

  // Anchors: the longest lines (most distinctive), earlier ones on ties.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < compared; ++i) {
    if (!lines[i].squashed.empty()) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return lines[x].squashed.size() > lines[y].squashed.size();
  });
  order.resize(std::min(order.size(), kAnchors));
  std::vector<Anchor> anchors;
  anchors.reserve(order.size());
  std::size_t reach = 0;  // 1 + the largest anchor index
  for (std::size_t index : order) {
    anchors.emplace_back(index, lines[index]);
    reach = std::max(reach, index + 1);
  }

  // Pass 1: every window start gets the sum of its anchors' scores, summed in
  // a ring of `reach` slots; a start is final once its furthest anchor's line
  // has been seen.
  TopStarts top(kCandidateWindows);
  std::vector<double> ring(reach, 0.0);
  std::size_t file_lines = 0;
  for_each_line(file, [&](std::size_t j, std::string_view line) {
    for (Anchor& anchor : anchors) {
      if (j >= anchor.index()) ring[(j - anchor.index()) % reach] += anchor.score(line);
    }
    if (j + 1 >= reach) {
      const std::size_t start = j + 1 - reach;
      top.offer(ring[start % reach], start);
      ring[start % reach] = 0.0;
    }
    file_lines = j + 1;
    return true;
  });
  for (std::size_t start = file_lines >= reach ? file_lines - reach + 1 : 0; start < file_lines;
       ++start) {
    top.offer(ring[start % reach], start);
  }
  const std::vector<std::size_t> starts = top.starts();
  if (starts.empty()) return std::nullopt;

  // Pass 2: exact scores for the kept windows, and their byte ranges.
  struct Window {
    std::size_t start;
    double score = 0;
    std::size_t begin = 0;
    std::size_t end = 0;
  };
  std::vector<Window> windows;
  for (std::size_t start : starts)
    windows.push_back({start});
  const std::size_t last_needed = starts.back() + span - 1;
  for_each_line(file, [&](std::size_t j, std::string_view line) {
    const auto offset = static_cast<std::size_t>(line.data() - file.data());
    for (Window& w : windows) {
      if (j < w.start || j >= w.start + span) continue;
      if (j == w.start) w.begin = offset;
      w.end = offset + line.size();
      if (j - w.start < compared) w.score += line_similarity(line, lines[j - w.start]);
    }
    return j < last_needed;
  });
  const Window* best = nullptr;
  for (const Window& w : windows) {
    if (best == nullptr || w.score > best->score) best = &w;
  }
  const double similarity = best->score / static_cast<double>(compared);
  if (similarity < kMinSimilarity) return std::nullopt;
  Candidate candidate;
  candidate.first_line = best->start + 1;
  candidate.last_line = std::min(best->start + span, file_lines);
  candidate.text = file.substr(best->begin, best->end - best->begin);
  candidate.similarity = std::min(similarity, 1.0);
  return candidate;
}

std::string describe_difference(std::string_view found, std::string_view wanted,
                                std::size_t first_line) {
  const std::vector<std::string_view> f = split_lines(found);
  const std::vector<std::string_view> w = split_lines(wanted);
  const std::size_t both = std::min(f.size(), w.size());
  std::optional<std::size_t> first_content;
  std::optional<std::size_t> first_whitespace;
  std::size_t content_lines = 0;
  std::size_t whitespace_lines = 0;
  std::size_t tabs_for_spaces = 0;  // the file's indent has tabs where old_string's has spaces
  std::size_t spaces_for_tabs = 0;
  for (std::size_t i = 0; i < both; ++i) {
    switch (compare_line(f[i], w[i], i == 0, i + 1 == w.size())) {
      case LineDiff::same:
        break;
      case LineDiff::content:
        ++content_lines;
        if (!first_content) first_content = i;
        break;
      case LineDiff::whitespace: {
        ++whitespace_lines;
        if (!first_whitespace) first_whitespace = i;
        const std::string_view lead_f = leading_space(f[i]);
        const std::string_view lead_w = leading_space(w[i]);
        const bool f_tabs = lead_f.find('\t') != std::string_view::npos;
        const bool w_tabs = lead_w.find('\t') != std::string_view::npos;
        if (f_tabs && !w_tabs && lead_w.find(' ') != std::string_view::npos) ++tabs_for_spaces;
        if (w_tabs && !f_tabs && lead_f.find(' ') != std::string_view::npos) ++spaces_for_tabs;
        break;
      }
    }
  }
  std::string out;
  if (first_content) {
    const std::size_t i = *first_content;
    out = describe_content_difference(f[i], w[i], i == 0, i + 1 == w.size(), first_line + i);
    if (content_lines > 1)
      out += " (" + count_of(content_lines, "line differs", "lines differ") + " in text)";
  }
  if (whitespace_lines > 0) {
    if (!out.empty()) out += "; also ";
    if (tabs_for_spaces == whitespace_lines) {
      out += "the file indents with tabs, old_string with spaces";
    } else if (spaces_for_tabs == whitespace_lines) {
      out += "the file indents with spaces, old_string with tabs";
    } else {
      out += describe_whitespace_difference(f[*first_whitespace], w[*first_whitespace],
                                            first_line + *first_whitespace);
    }
    if (whitespace_lines > 1) {
      out += " (" + count_of(whitespace_lines, "line differs", "lines differ") +
             " only in whitespace)";
    }
  }
  if (f.size() != w.size()) {
    if (!out.empty()) out += "; ";
    out += "old_string has " + count_of(w.size(), "line", "lines") + " but the file ends after " +
           count_of(f.size(), "line", "lines") + " of the region";
  }
  if (out.empty()) out = "the text differs only in line endings or in where the region starts";
  return out;
}

std::optional<std::string> recognised_mistake(std::string_view file, std::string_view wanted) {
  // read_file's line numbers copied along with the text.
  const std::vector<std::string_view> lines = split_lines(wanted);
  std::string stripped;
  std::size_t numbered = 0;
  bool all_numbered = true;  // blank lines aside
  for (std::size_t i = 0; i < lines.size() && all_numbered; ++i) {
    if (i > 0) stripped += '\n';
    if (const auto rest = without_line_number(lines[i])) {
      ++numbered;
      stripped += *rest;
    } else {
      all_numbered = lines[i].empty();
    }
  }
  if (all_numbered && numbered > 0) {
    if (wanted.ends_with('\n')) stripped += '\n';
    std::string message =
        "old_string includes read_file's line-number prefixes (like \"    12|\"), which are not "
        "part of the file: send only the text after the '|' on each line";
    if (!contains(file, stripped)) message += " (without them it does not match exactly either)";
    return message;
  }

  // Escape sequences written out as text.
  if (wanted.find('\\') != std::string_view::npos) {
    std::string unescaped;
    for (std::size_t i = 0; i < wanted.size(); ++i) {
      if (wanted[i] == '\\' && i + 1 < wanted.size()) {
        const char next = wanted[i + 1];
        const char* real = next == 'n'    ? "\n"
                           : next == 't'  ? "\t"
                           : next == '"'  ? "\""
                           : next == '\\' ? "\\"
                                          : nullptr;
        if (real != nullptr) {
          unescaped += real;
          ++i;
          continue;
        }
      }
      unescaped += wanted[i];
    }
    if (unescaped != wanted && contains(file, unescaped)) {
      return "old_string has escape sequences written out as text (a backslash followed by n, t "
             "or a quote) where the file has the characters themselves: send real line breaks, "
             "tabs and quotes";
    }
  }

  // Windows line endings the file does not have.
  if (wanted.find('\r') != std::string_view::npos && file.find('\r') == std::string_view::npos) {
    return "old_string has carriage returns (␍, Windows line endings) but the file has none: "
           "use plain \\n line breaks";
  }
  return std::nullopt;
}

}  // namespace loopr::tool
