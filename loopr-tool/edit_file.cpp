// edit_file {path, old_string, new_string, replace_all=false}
//        or {path, edits: [{old_string, new_string, replace_all}, ...]}
// plus two arguments only the daemon sends (they are not in the model's schema):
//   expected_hash  content_hash of the session's last read of the file; a file
//                  that changed since is refused as stale_read; one that is
//                  gone may be created again (empty old_string);
//   create_only    the session never read the file: an existing file is
//                  refused as not_read_first, only creating one is allowed.
//
// The edits apply in order to the file in memory, all or nothing; the result
// replaces the file atomically (atomic_write.hpp), keeping its mode. Matching
// is byte for byte, with two allowances for text a model copies from
// read_file, which shows lines without their "\r" and ends every line:
// - In a CRLF file (most line breaks are "\r\n"), the "\n" line breaks of
//   old_string and new_string are matched and written as "\r\n".
// - At the end of the file: where a match is followed only by line breaks,
//   new_string's trailing line break is made to agree with the matched
//   text's (at_file_end), and an old_string whose trailing line breaks stand
//   for the final newline the file lacks still matches. An edit therefore
//   never adds or drops the file's final newline as a side effect, and
//   applying the reverse edit (new_string -> old_string) restores the file
//   byte for byte.
//
// Failures say what to do next: no_match shows the nearest candidate with its
// whitespace visible (edit_diagnosis.hpp), ambiguous_match lists the lines,
// already_applied says that the new text is already there.
#include <fcntl.h>

#include <algorithm>
#include <cmath>

#include "loopr-tool/arguments.hpp"
#include "loopr-tool/atomic_write.hpp"
#include "loopr-tool/binary_detection.hpp"
#include "loopr-tool/content_hash.hpp"
#include "loopr-tool/edit_diagnosis.hpp"
#include "loopr-tool/tools.hpp"

namespace loopr::tool {
namespace {

constexpr std::size_t kMaxEdits = 100;
constexpr std::size_t kListedMatches = 20;
constexpr std::size_t kSnippetContext = 2;
constexpr std::size_t kSnippetLines = 30;
constexpr std::size_t kShownLineBytes = 300;
constexpr std::size_t kShownCandidateLines = 20;

struct Edit {
  std::string old_string;
  std::string new_string;
  bool replace_all = false;
};

struct Request {
  std::string path;
  std::vector<Edit> edits;
  bool as_list = false;  // given as `edits`, so errors name the edit
  std::optional<std::string> expected_hash;
  bool create_only = false;
};

// ---- arguments ----

Result<Edit> parse_edit(const Arguments& args) {
  auto old_string = args.required_string("old_string");
  if (!old_string) return std::move(old_string).error();
  auto new_string = args.required_string("new_string");
  if (!new_string) return std::move(new_string).error();
  auto replace_all = args.boolean_or("replace_all", false);
  if (!replace_all) return std::move(replace_all).error();
  return Edit{std::move(*old_string), std::move(*new_string), *replace_all};
}

Result<void> check_edit(const Edit& edit, std::size_t index, bool as_list) {
  const std::string which =
      as_list ? "edit_file edits[" + std::to_string(index) + "]: " : "edit_file: ";
  if (edit.old_string == edit.new_string) {
    return make_error(errc::invalid_arguments,
                      which + "old_string and new_string are the same, so nothing would change",
                      "put the exact text to change in old_string and what it should become in "
                      "new_string");
  }
  if (edit.old_string.empty() && edit.replace_all) {
    return make_error(errc::invalid_arguments, which + "replace_all needs a non-empty old_string",
                      "give the text to replace in old_string; an empty old_string only creates a "
                      "new file");
  }
  if (edit.old_string.empty() && index > 0) {
    return make_error(errc::invalid_arguments,
                      which + "has an empty old_string; only the first edit may create the file",
                      "give the exact text to replace in old_string");
  }
  return {};
}

Result<Request> parse_request(const Json& raw) {
  auto args = Arguments::parse(
      raw, "edit_file",
      {"path", "old_string", "new_string", "replace_all", "edits", "expected_hash", "create_only"});
  if (!args) return std::move(args).error();
  Request request;
  auto path = args->required_string("path");
  if (!path) return std::move(path).error();
  request.path = std::move(*path);
  auto expected = args->optional_string("expected_hash");
  if (!expected) return std::move(expected).error();
  request.expected_hash = std::move(*expected);
  auto create_only = args->boolean_or("create_only", false);
  if (!create_only) return std::move(create_only).error();
  request.create_only = *create_only;

  const bool single =
      args->has("old_string") || args->has("new_string") || args->has("replace_all");
  if (args->has("edits")) {
    if (single) {
      return make_error(errc::invalid_arguments,
                        "edit_file: give either old_string/new_string (one edit) or edits (a list "
                        "of edits), not both",
                        "move old_string/new_string into the edits list, or drop edits");
    }
    const Json& list = args->raw("edits");
    if (!list.is_array()) {
      return make_error(errc::invalid_arguments,
                        std::string("edit_file: argument 'edits' must be a list of {old_string, "
                                    "new_string, replace_all} objects, got ") +
                            list.type_name(),
                        "send edits as a JSON array, e.g. [{\"old_string\": \"a\", "
                        "\"new_string\": \"b\"}]");
    }
    if (list.empty()) {
      return make_error(errc::invalid_arguments, "edit_file: 'edits' is empty",
                        "give at least one {old_string, new_string} in edits");
    }
    if (list.size() > kMaxEdits) {
      return make_error(errc::invalid_arguments,
                        "edit_file: 'edits' has " + std::to_string(list.size()) +
                            " edits; at most " + std::to_string(kMaxEdits) + " fit in one call",
                        "split them over several edit_file calls");
    }
    request.as_list = true;
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto item = Arguments::parse(list[i], "edit_file edits[" + std::to_string(i) + "]",
                                   {"old_string", "new_string", "replace_all"});
      if (!item) return std::move(item).error();
      auto edit = parse_edit(*item);
      if (!edit) return std::move(edit).error();
      request.edits.push_back(std::move(*edit));
    }
  } else {
    if (!single) {
      return make_error(errc::invalid_arguments,
                        "edit_file: missing old_string and new_string (or edits)",
                        "give old_string (the exact text to replace) and new_string, or edits: "
                        "[{\"old_string\": ..., \"new_string\": ...}, ...]");
    }
    auto edit = parse_edit(*args);
    if (!edit) return std::move(edit).error();
    request.edits.push_back(std::move(*edit));
  }
  for (std::size_t i = 0; i < request.edits.size(); ++i) {
    if (auto r = check_edit(request.edits[i], i, request.as_list); !r) return std::move(r).error();
  }
  return request;
}

// ---- line endings ----

// True if most of the text's line breaks are "\r\n".
bool uses_crlf(std::string_view text) {
  std::size_t breaks = 0;
  std::size_t crlf = 0;
  for (std::size_t i = text.find('\n'); i != std::string_view::npos; i = text.find('\n', i + 1)) {
    ++breaks;
    if (i > 0 && text[i - 1] == '\r') ++crlf;
  }
  return crlf * 2 > breaks;
}

// Every "\n" not already after a "\r" becomes "\r\n".
std::string to_crlf(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' && (i == 0 || text[i - 1] != '\r')) out += '\r';
    out += text[i];
  }
  return out;
}

// Every "\r\n" becomes "\n".
std::string to_lf(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    out += text[i];
  }
  return out;
}

// Length of the line break that ends `text`: 2 for "\r\n", 1 for "\n", else 0.
std::size_t final_break(std::string_view text) {
  if (text.ends_with("\r\n")) return 2;
  return text.ends_with('\n') ? 1 : 0;
}

// The index just past the last byte that is not part of a line break; a match
// ending at or beyond it is followed only by line breaks.
std::size_t end_of_text(std::string_view content) {
  std::size_t end = content.size();
  while (end > 0 && (content[end - 1] == '\n' || content[end - 1] == '\r'))
    --end;
  return end;
}

// ---- matching ----

struct Match {
  std::size_t offset = 0;
  std::size_t length = 0;  // of the matched bytes
};

// old_string's last line break standing for the final newline the file lacks:
// the match without that line break, at the very end of the file.
std::optional<Match> match_missing_final_newline(std::string_view content,
                                                 std::string_view needle) {
  const std::string_view body = needle.substr(0, end_of_text(needle));
  if (body.size() == needle.size() || body.empty() || content.ends_with('\n')) {
    return std::nullopt;
  }
  if (!content.ends_with(body)) return std::nullopt;
  return Match{content.size() - body.size(), body.size()};
}

// True if `text` stands at `pos` in `content`, its trailing line breaks
// possibly standing for the final newline the file lacks.
bool text_at(std::string_view content, std::size_t pos, std::string_view text) {
  const std::string_view rest = content.substr(pos);
  if (rest.starts_with(text)) return true;
  return !content.ends_with('\n') && end_of_text(text) < text.size() &&
         rest == text.substr(0, end_of_text(text));
}

// What end-of-file adjustment a replacement got; reported in the result.
enum class EndFix { none, break_added, break_dropped };

// `replacement` as written over a match followed only by line breaks (see
// the top of this file):
// - a match that ends the file, which has no final newline, gets a
//   replacement without trailing line breaks, so the file still has none;
// - otherwise the replacement ends with a line break if and only if the
//   matched text does (one is added or dropped), so the line breaks after the
//   match still end the file as before.
// An empty replacement (deleting text) is kept as it is.
std::string at_file_end(std::string_view content, Match match, std::string_view replacement,
                        std::string_view line_break, EndFix& fix) {
  std::string out(replacement);
  if (replacement.empty()) return out;
  const std::string_view matched = content.substr(match.offset, match.length);
  const bool replacement_breaks = replacement.ends_with('\n');
  if (match.offset + match.length == content.size() && !content.ends_with('\n')) {
    if (replacement_breaks) {
      out.resize(end_of_text(out));
      fix = EndFix::break_dropped;
    }
  } else if (matched.ends_with('\n') && !replacement_breaks) {
    out += line_break;
    fix = EndFix::break_added;
  } else if (!matched.ends_with('\n') && replacement_breaks) {
    out.resize(out.size() - final_break(out));
    fix = EndFix::break_dropped;
  }
  return out;
}

// ---- the edit session ----

class EditSession {
 public:
  EditSession(std::string relative, std::size_t edit_count, bool as_list, bool crlf)
      : relative_(std::move(relative)),
        edit_count_(edit_count),
        as_list_(as_list),
        crlf_(crlf),
        line_break_(crlf ? "\r\n" : "\n") {}

  // Applies edits[index] to `content` in place.
  Result<void> apply(std::string& content, const Edit& edit, std::size_t index);

  std::size_t replacements() const { return replacements_; }
  Json notes() const {
    Json out = Json::array();
    if (fixes_added_) {
      out.push_back(
          "at the end of the file a line break was added after new_string, as the "
          "matched text ended with one, so the file keeps its final newline");
    }
    if (fixes_dropped_) {
      out.push_back(
          "at the end of the file new_string's trailing line break was left out, as "
          "the matched text had none, so the file's end stays as it was");
    }
    if (missing_newline_matched_) {
      out.push_back(
          "old_string's trailing line break matched the end of the file, which has no "
          "final newline");
    }
    return out;
  }

 private:
  std::string which(std::size_t index) const {
    if (!as_list_) return "edit_file: ";
    return "edit_file: edit " + std::to_string(index + 1) + " of " + std::to_string(edit_count_) +
           " (edits[" + std::to_string(index) + "]): ";
  }
  std::string after_earlier(std::size_t index) const {
    return index > 0 ? " (line numbers count after the edits before it are applied)" : "";
  }
  Error located(Error error, std::size_t index) const {
    if (as_list_) {
      if (error.details.is_null()) error.details = Json::object();
      error.details["edit_index"] = index;
      error.hint += "; nothing was written, so fix this edit and send the whole list again";
    }
    return error;
  }

  void record(EndFix fix) {
    fixes_added_ = fixes_added_ || fix == EndFix::break_added;
    fixes_dropped_ = fixes_dropped_ || fix == EndFix::break_dropped;
  }
  std::string replacement_for(std::string_view content, Match match, const std::string& replacement,
                              std::size_t text_end) {
    if (match.offset + match.length < text_end) return replacement;
    EndFix fix = EndFix::none;
    std::string out = at_file_end(content, match, replacement, line_break_, fix);
    record(fix);
    return out;
  }
  Result<void> replace_one(std::string& content, Match match, const std::string& replacement);
  Result<void> replace_all(std::string& content, const std::string& old_text,
                           const std::string& new_text);
  std::optional<Error> already_applied(std::string_view content, const std::string& old_text,
                                       const std::string& new_text, std::size_t index) const;
  Error no_match(std::string_view content, const Edit& edit, std::size_t index) const;
  Error ambiguous(std::string_view content, const std::vector<std::size_t>& offsets,
                  std::size_t index) const;

  std::string relative_;
  std::size_t edit_count_;
  bool as_list_;
  bool crlf_;
  std::string line_break_;
  std::size_t replacements_ = 0;
  bool fixes_added_ = false;
  bool fixes_dropped_ = false;
  bool missing_newline_matched_ = false;
};

Error too_large_result(const std::string& relative) {
  return make_error(errc::too_large,
                    "edit_file: the edited '" + relative + "' would be over " +
                        std::to_string(kMaxEditableBytes >> 20) + " MiB",
                    "make smaller edits, or generate large files with run_command");
}

Result<void> EditSession::replace_one(std::string& content, Match match,
                                      const std::string& replacement) {
  const std::string written = replacement_for(content, match, replacement, end_of_text(content));
  if (content.size() - match.length + written.size() > kMaxEditableBytes) {
    return too_large_result(relative_);
  }
  content.replace(match.offset, match.length, written);
  ++replacements_;
  return {};
}

Result<void> EditSession::replace_all(std::string& content, const std::string& old_text,
                                      const std::string& new_text) {
  const std::size_t text_end = end_of_text(content);
  std::string out;
  std::size_t pos = 0;
  std::size_t count = 0;
  constexpr std::size_t kBatch = 4096;  // occurrences found per search call
  for (;;) {
    const auto hits =
        find_occurrences(std::string_view(content).substr(pos), old_text, kBatch, false);
    const std::size_t base = pos;
    for (std::size_t hit : hits) {
      const Match match{base + hit, old_text.size()};
      out.append(content, pos, match.offset - pos);
      out += replacement_for(content, match, new_text, text_end);
      pos = match.offset + match.length;
      ++count;
      if (out.size() > kMaxEditableBytes) return too_large_result(relative_);
    }
    if (hits.size() < kBatch) break;
  }
  out.append(content, pos);
  if (out.size() > kMaxEditableBytes) return too_large_result(relative_);
  content = std::move(out);
  replacements_ += count;
  return {};
}

Result<void> EditSession::apply(std::string& content, const Edit& edit, std::size_t index) {
  const std::string old_text = crlf_ ? to_crlf(edit.old_string) : edit.old_string;
  const std::string new_text = crlf_ ? to_crlf(edit.new_string) : edit.new_string;
  if (old_text.empty()) {  // creating the file (checked by the caller)
    content = new_text;
    ++replacements_;
    return {};
  }
  if (edit.replace_all) {
    const std::size_t before = replacements_;
    if (auto r = replace_all(content, old_text, new_text); !r) return r;
    if (replacements_ > before) return {};
  } else {
    const auto offsets = find_occurrences(content, old_text, kListedMatches + 1, true);
    if (offsets.size() > 1) return located(ambiguous(content, offsets, index), index);
    if (offsets.size() == 1) {
      const Match match{offsets.front(), old_text.size()};
      if (auto e = already_applied(content, old_text, new_text, index)) return located(*e, index);
      return replace_one(content, match, new_text);
    }
  }
  if (const auto match = match_missing_final_newline(content, old_text)) {
    missing_newline_matched_ = true;
    return replace_one(content, *match, new_text);
  }
  if (auto e = already_applied(content, old_text, new_text, index)) return located(*e, index);
  return located(no_match(content, edit, index), index);
}

// The edit is already in the file when either
// - old_text is absent and new_text is present (and new_text is not part of
//   old_text, whose presence would prove nothing), or
// - old_text occurs once, inside an occurrence of new_text at just the place
//   the edit would put it (new_text contains old_text): applying it again
//   would repeat the change.
std::optional<Error> EditSession::already_applied(std::string_view content,
                                                  const std::string& old_text,
                                                  const std::string& new_text,
                                                  std::size_t index) const {
  const bool has_text = std::any_of(new_text.begin(), new_text.end(), [](char c) {
    return c != ' ' && c != '\t' && c != '\r' && c != '\n';
  });
  if (!has_text) return std::nullopt;
  const std::string hint_tail =
      as_list_ ? ", and drop this edit from the list" : ", then go on with the next change";
  const auto old_at = find_occurrences(content, old_text, 1, false);
  if (old_at.empty()) {
    if (old_text.find(new_text) != std::string::npos) return std::nullopt;
    std::vector<std::size_t> offsets = find_occurrences(content, new_text, kListedMatches, false);
    if (offsets.empty()) {
      if (const auto m = match_missing_final_newline(content, new_text))
        offsets.push_back(m->offset);
    }
    if (offsets.empty()) return std::nullopt;
    const std::size_t line = line_numbers_of(content, offsets).front();
    Error error = make_error(
        errc::already_applied,
        which(index) + "old_string is not in '" + relative_ + "' but new_string is, at line " +
            std::to_string(line) + after_earlier(index) + ": this edit looks already applied",
        "read_file around line " + std::to_string(line) + " to confirm" + hint_tail +
            "; if new_string is there for another reason, make old_string "
            "match the text you mean to change");
    error.details = {{"new_string_line", line}};
    return error;
  }
  // old_text occurs (once, checked by the caller): is it inside new_text already?
  if (new_text.size() <= old_text.size()) return std::nullopt;
  const std::size_t at = old_at.front();
  for (std::size_t inner : find_occurrences(new_text, old_text, 8, true)) {
    if (inner <= at && text_at(content, at - inner, new_text)) {
      const std::size_t line = line_numbers_of(content, {at - inner}).front();
      Error error = make_error(
          errc::already_applied,
          which(index) + "new_string is already in '" + relative_ + "' at line " +
              std::to_string(line) + after_earlier(index) +
              ", around the only match of old_string: applying the edit again would repeat it",
          "read_file around line " + std::to_string(line) + " to confirm" + hint_tail +
              "; to apply it once more on purpose, include the surrounding text in old_string");
      error.details = {{"new_string_line", line}};
      return error;
    }
  }
  return std::nullopt;
}

// `text` for a message: at most kShownCandidateLines lines of kShownLineBytes,
// whitespace visible.
std::string shown(std::string_view text) {
  std::string numbered = numbered_lines(text, 1, kShownCandidateLines, kShownLineBytes, true);
  // Drop the numbers: old_string is the model's text, not lines of the file.
  std::string out;
  std::size_t start = 0;
  while (start < numbered.size()) {
    const std::size_t end = numbered.find('\n', start);
    const std::string_view line = std::string_view(numbered).substr(start, end - start);
    const std::size_t bar = line.find('|');
    out += line.starts_with("(") || bar == std::string_view::npos ? line : line.substr(bar + 1);
    out += '\n';
    start = end + 1;
  }
  return out;
}

Error EditSession::no_match(std::string_view content, const Edit& edit, std::size_t index) const {
  // Diagnose on the text as read_file shows it: in a CRLF file, without "\r".
  const std::string lf_content = crlf_ ? to_lf(content) : std::string();
  const std::string_view file = crlf_ ? std::string_view(lf_content) : content;
  const std::string wanted = crlf_ ? to_lf(edit.old_string) : edit.old_string;

  std::string message =
      which(index) + "old_string was not found in '" + relative_ + "'" + after_earlier(index);
  Json details = Json::object();
  std::string hint;
  const auto mistake = recognised_mistake(file, wanted);
  const auto candidate = nearest_candidate(file, wanted);
  if (candidate) {
    const std::string range =
        std::to_string(candidate->first_line) + "-" + std::to_string(candidate->last_line);
    const std::string difference =
        describe_difference(candidate->text, wanted, candidate->first_line);
    const std::string text = numbered_lines(candidate->text, candidate->first_line,
                                            kShownCandidateLines, kShownLineBytes, true);
    message += ".\nThe nearest text is at lines " + range + " (" + std::string(kWhitespaceLegend) +
               "):\n" + text + "old_string, with the same markers:\n" + shown(wanted) +
               "Difference: " + difference + ".";
    details["nearest"] = {{"first_line", candidate->first_line},
                          {"last_line", candidate->last_line},
                          {"similarity", std::round(candidate->similarity * 100) / 100},
                          {"text", text},
                          {"difference", difference}};
    const std::size_t lines = candidate->last_line - candidate->first_line + 1;
    hint = "copy old_string exactly from lines " + range +
           " (read_file offset=" + std::to_string(candidate->first_line) +
           " limit=" + std::to_string(lines) +
           " shows them; take the text after the '|'), with the file's whitespace, and call "
           "edit_file again";
  } else {
    message += "; nothing in the file resembles it";
    hint =
        "read the file with read_file and copy the text to replace exactly; the file may not "
        "be the one you mean, or it changed since you read it";
  }
  if (mistake) {
    message += "\nLikely cause: " + *mistake + ".";
    details["likely_cause"] = *mistake;
    hint = "fix old_string as the likely cause says and call edit_file again";
  }
  Error error = make_error(errc::no_match, std::move(message), std::move(hint));
  error.details = std::move(details);
  return error;
}

Error EditSession::ambiguous(std::string_view content, const std::vector<std::size_t>& offsets,
                             std::size_t index) const {
  std::vector<std::size_t> lines = line_numbers_of(content, offsets);
  const bool more = offsets.size() > kListedMatches;
  if (more) lines.resize(kListedMatches);
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  std::string listed;
  for (std::size_t line : lines)
    listed += (listed.empty() ? "" : ", ") + std::to_string(line);
  if (more) listed += " and more";
  const std::string count =
      more ? "more than " + std::to_string(kListedMatches) : std::to_string(offsets.size());
  Error error = make_error(errc::ambiguous_match,
                           which(index) + "old_string matches " + count + " places in '" +
                               relative_ + "' (lines " + listed + ")" + after_earlier(index) +
                               ", so it is not clear which one to change",
                           "add a few surrounding lines to old_string so that it matches exactly "
                           "one place, or set replace_all to true to change every one");
  error.details = {{"match_lines", lines}, {"more", more}};
  return error;
}

// ---- the result ----

// Lines around the changed part of `after`, numbered as read_file numbers
// them: from the first byte that differs from `before` to the last.
std::string changed_snippet(std::string_view before, std::string_view after) {
  if (before == after) return "";
  std::size_t prefix = 0;
  while (prefix < before.size() && prefix < after.size() && before[prefix] == after[prefix]) {
    ++prefix;
  }
  std::size_t suffix = 0;
  while (suffix < before.size() - prefix && suffix < after.size() - prefix &&
         before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix]) {
    ++suffix;
  }
  const std::size_t change_end = std::max(prefix, after.size() - suffix);
  const auto lines =
      line_numbers_of(after, {prefix, change_end > prefix ? change_end - 1 : prefix});
  const std::size_t first = lines[0] > kSnippetContext ? lines[0] - kSnippetContext : 1;
  const std::size_t last = lines[1] + kSnippetContext;
  std::size_t begin = 0;
  std::size_t end = after.size();
  std::size_t line = 1;
  for (std::size_t i = 0; i < after.size(); ++i) {
    if (after[i] != '\n') continue;
    ++line;
    if (line == first) begin = i + 1;
    if (line == last + 1) {
      end = i + 1;
      break;
    }
  }
  return numbered_lines(after.substr(begin, end - begin), first, kSnippetLines, kShownLineBytes,
                        false);
}

// Refuses a path in git metadata before open_parent() creates any folder for
// it: by name, and by its nearest existing folder, which may be reached
// through a symlink into .git.
Error stale(const std::string& relative, std::string_view current, const std::string& expected) {
  Error error = make_error(errc::stale_read,
                           "'" + relative + "' changed since it was last read (now " +
                               std::to_string(current.size()) + " bytes)",
                           "read it again with read_file, then redo the edit on the current "
                           "content");
  error.details = {{"current_hash", content_hash(current)}, {"expected_hash", expected}};
  return error;
}

}  // namespace

Result<Json> edit_file(const Worktree& worktree, const Json& raw) {
  auto request = parse_request(raw);
  if (!request) return std::move(request).error();
  auto rel = worktree.relative(request->path);
  if (!rel) return std::move(rel).error();
  const bool creating = request->edits.front().old_string.empty();
  if (creating) {
    if (auto r = refuse_git_metadata_before_creating(worktree, *rel); !r) {
      return std::move(r).error();
    }
  }
  auto parent = worktree.open_parent(*rel, /*create_parents=*/creating);
  if (!parent) return std::move(parent).error();
  if (auto r = refuse_git_metadata(worktree, *parent); !r) return std::move(r).error();
  auto existing = existing_regular_file(*parent);
  if (!existing) return std::move(existing).error();

  if (existing->has_value() &&
      static_cast<std::uint64_t>((**existing).st_size) > kMaxEditableBytes) {
    return too_large_to_change(*rel, (**existing).st_size);
  }
  if (existing->has_value() && request->create_only) {
    return make_error(errc::not_read_first,
                      "'" + *rel + "' already exists and has not been read in this session",
                      "read it first with read_file, then edit it");
  }
  std::string original;
  if (existing->has_value()) {
    auto current = read_whole_file(*parent, kMaxEditableBytes);
    if (!current) return std::move(current).error();
    original = std::move(*current);
    if (request->expected_hash && content_hash(original) != *request->expected_hash) {
      return stale(*rel, original, *request->expected_hash);
    }
    if (looks_binary(original)) {
      return make_error(errc::binary_file,
                        "'" + *rel +
                            "' looks like a binary file (it has NUL bytes); edit_file "
                            "changes text files only",
                        "replace it whole with write_file, or use run_command with a tool made "
                        "for its format");
    }
    if (creating && !original.empty()) {
      return make_error(errc::invalid_arguments,
                        "edit_file: '" + *rel + "' already exists (" +
                            std::to_string(original.size()) +
                            " bytes); an empty old_string only creates a new file",
                        "to change it, give the exact text to replace as old_string; to replace "
                        "all of it, use write_file");
    }
  } else if (!creating) {
    return worktree.not_found(
        *rel,
        "no such file: '" + *rel + "'" +
            (request->expected_hash ? " (it was read before, and is gone now)" : ""),
        "check the path with list_directory or glob; to create the file, call edit_file with an "
        "empty old_string and the content as new_string, or use write_file");
  }

  const bool crlf = uses_crlf(original);
  EditSession session(*rel, request->edits.size(), request->as_list, crlf);
  std::string content = original;
  for (std::size_t i = 0; i < request->edits.size(); ++i) {
    if (auto r = session.apply(content, request->edits[i], i); !r) return std::move(r).error();
  }
  if (auto r = atomic_replace(*parent, content, *existing); !r) return std::move(r).error();

  Json result = {{"path", *rel},
                 {"replacements", session.replacements()},
                 {"created", !existing->has_value()},
                 {"content_hash", content_hash(content)},
                 {"bytes_written", content.size()},
                 {"snippet", changed_snippet(original, content)}};
  if (crlf) result["line_endings"] = "crlf";
  if (Json notes = session.notes(); !notes.empty()) result["notes"] = std::move(notes);
  return result;
}

}  // namespace loopr::tool
