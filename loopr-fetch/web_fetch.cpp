#include "loopr-fetch/web_fetch.hpp"

#include <string>
#include <vector>

#include "common/utf8.hpp"
#include "egress/address_policy.hpp"
#include "loopr-fetch/charset.hpp"
#include "loopr-fetch/fetch_url.hpp"
#include "loopr-fetch/html_text.hpp"
#include "loopr-fetch/http_fetch.hpp"
#include "loopr-fetch/job_address_policy.hpp"
#include "loopr-tool/arguments.hpp"
#include "loopr-tool/job_facts.hpp"

namespace loopr::fetch {
namespace {

using Json = nlohmann::json;

// Without a runner (tests, a manual run): the catalog's default cap.
constexpr std::size_t kDefaultOutputCap = 500'000;
// An HTTP error's page, quoted in the error message, is cut to this.
constexpr std::size_t kFetchErrorExcerptBytes = 600;

bool is_html(const std::string& media_type) {
  return media_type == "text/html" || media_type == "application/xhtml+xml";
}

// Media types shown as text as they are.
bool is_text(const std::string& media_type) {
  if (media_type.starts_with("text/")) return true;
  for (const char* suffix : {"/json", "+json", "/xml", "+xml", "/javascript", "/ecmascript",
                             "/x-yaml", "/yaml", "/toml", "/x-sh", "/markdown"}) {
    if (media_type.ends_with(suffix)) return true;
  }
  return false;
}

// Puts `content` into `result`, cut so the whole result stays within `cap`
// bytes once serialized (JSON escapes can make text longer).
void fit_content(Json& result, std::string content, std::size_t cap) {
  const std::size_t total = content.size();
  result["content"] = "";
  const std::size_t frame = result.dump(-1, ' ', false, Json::error_handler_t::replace).size();
  const std::size_t room = cap > frame + 256 ? cap - frame - 256 : 0;
  std::size_t keep = total;
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string shown = content.substr(0, utf8_safe_prefix(content, keep));
    if (shown.size() < total) {
      shown += "\n\n[content truncated: " + std::to_string(total) + " bytes total, " +
               std::to_string(shown.size()) + " shown]";
    }
    const std::size_t size =
        Json(shown).dump(-1, ' ', false, Json::error_handler_t::replace).size();
    if (size <= room || keep == 0) {
      result["content"] = std::move(shown);
      result["truncated"] = result.value("truncated", false) || keep < total;
      return;
    }
    keep = keep * room / size * 9 / 10;
  }
  result["content"] = "";
  result["truncated"] = true;
}

}  // namespace

Result<Json> web_fetch(const tool::Worktree& /*worktree*/, const Json& args) {
  auto arguments = tool::Arguments::parse(args, "web_fetch", {"url", "format", "allowed_networks"});
  if (!arguments) return std::move(arguments).error();
  auto url_text = arguments->required_string("url");
  if (!url_text) return std::move(url_text).error();
  auto format = arguments->choice_or("format", "markdown", {"markdown", "text", "html"});
  if (!format) return std::move(format).error();
  auto policy = job_address_policy(*arguments, "web_fetch");
  if (!policy) return std::move(policy).error();
  auto url = checked_fetch_url(*url_text);
  if (!url) return std::move(url).error();
  // The runner says when the lane has no network: the resolver would only
  // fail with a misleading "cannot resolve host".
  if (tool::job_network_off()) {
    return make_error(
        errc::sandbox_denied,
        "network is off in lane " + tool::job_lane() + "; web_fetch cannot reach " + *url,
        "web_fetch belongs in lane net (catalog.toml [tools.web_fetch] lane)");
  }

  auto page = http_get(*url, *policy, FetchLimits{});
  if (!page) return std::move(page).error();

  const std::string media_type = media_type_of(page->content_type);
  const std::string charset = charset_of(page->content_type);
  const bool html =
      is_html(media_type) || (media_type.empty() && page->body.find("<html") != std::string::npos);
  if (!html && !is_text(media_type) && !media_type.empty()) {
    return make_error(errc::binary_file,
                      page->url + " is " + media_type + " (" + std::to_string(page->body.size()) +
                          (page->body_truncated ? "+" : "") +
                          " bytes), not text; web_fetch returns web pages and text only",
                      "fetch an HTML or text page instead");
  }
  if (!html && media_type.empty() && page->body.find('\0') != std::string::npos) {
    return make_error(errc::binary_file,
                      page->url +
                          " sent binary content without a content type; web_fetch "
                          "returns web pages and text only",
                      "fetch an HTML or text page instead");
  }

  Json result = {{"url", page->url},           {"status", page->status},
                 {"content_type", media_type}, {"format", html ? *format : "text"},
                 {"bytes", page->body.size()}, {"truncated", page->body_truncated}};
  if (page->redirects > 0) result["redirects"] = page->redirects;
  std::string content;
  if (html && *format != "html") {
    PageText text = html_to_text(
        page->body, charset, *format == "text" ? TextStyle::text : TextStyle::markdown, page->url);
    if (!text.title.empty()) result["title"] = std::move(text.title);
    content = std::move(text.text);
  } else {
    content = decode_to_utf8(page->body, charset);
  }

  if (page->status >= 400) {
    const std::string excerpt =
        content.substr(0, utf8_safe_prefix(content, kFetchErrorExcerptBytes));
    Error error = make_error(errc::http_error,
                             page->url + " answered HTTP " + std::to_string(page->status) +
                                 (excerpt.empty() ? "" : ": " + excerpt),
                             page->status == 404 || page->status == 410
                                 ? "the page does not exist; check the URL or search for it"
                                 : "the server refused or failed; check the URL or try later");
    error.details = Json{{"status", page->status}, {"url", page->url}};
    return error;
  }
  fit_content(result, std::move(content), tool::job_max_output_bytes().value_or(kDefaultOutputCap));
  return result;
}

}  // namespace loopr::fetch
