// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/endpoint.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/percent_decode.hpp>
#include <letterbox/error.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp {

/// A parsed `amqp://` or `amqps://` URL (the RabbitMQ URI specification, with its query
/// parameters):
///
///     amqp[s]://[user[:password]@]host[:port][,host[:port]...][/vhost][?key=value&...]
///
/// - The scheme decides TLS and the default port: `amqp` 5672, `amqps` 5671.
/// - User, password, host and vhost are percent-decoded (`%2F` is `/`). User and password
///   default to `guest`; the host to `localhost`; an IPv6 host is written in brackets.
/// - Several endpoints, the nodes of one cluster, are separated by commas
///   (`amqp://ops:pw@rabbit-1,rabbit-2:5673,[::1]/orders`); credentials, vhost and query are
///   shared by all, and each port defaults to the scheme's. `amqp::transport` connects to one
///   and fails over to the others (docs/amqp.md, "Failover"). `host` and `port` are the first
///   endpoint, `more_endpoints` the others; `endpoints()` lists them all. An empty entry, the
///   same host and port twice (host names compared case-insensitively) and more than
///   `max_endpoints` are refused.
/// - The vhost is the path without its leading `/`. No path and an empty path (`.../`) both
///   mean the default vhost `/`: the specification reads an empty path as the vhost named ""
///   (which no broker has by default), but `amqp://host/` is how nearly everyone writes "the
///   default vhost", as most clients read it. Write `%2F` for `/` explicitly.
/// - Query parameters: `heartbeat` (seconds; 0 disables), `frame_max` (bytes; 0 or at least
///   4096), `channel_max` (0 to 65535), `connection_timeout` (milliseconds); for `amqps` only,
///   `cacertfile`, `certfile`, `keyfile` (percent-decoded paths), `verify` (`verify_peer` or
///   `verify_none`) and `server_name_indication` (a host name, or `disable`), as RabbitMQ's
///   Erlang client names them. Any other key is refused, so that a typo does not silently fall
///   back to a default, and so is a TLS key on an `amqp://` URL.
///
/// Parsing never trusts its input: every number is range-checked, every `%` escape must be
/// two hex digits, and an error says what is wrong without echoing the password.
struct url {
    /// The most endpoints a URL may list (`try_parse_url`, `set_endpoints`).
    static constexpr std::size_t max_endpoints = 64;

    bool tls = false;
    /// The first endpoint (with a single one, the broker): what code written for one host reads.
    std::string host = "localhost";
    std::uint16_t port = 5672;
    std::string user = "guest";
    std::string password = "guest";
    std::string vhost = "/";
    std::optional<std::chrono::seconds> heartbeat{};
    std::optional<std::uint32_t> frame_max{};
    std::optional<std::uint16_t> channel_max{};
    std::optional<std::chrono::milliseconds> connection_timeout{};
    /// TLS (`amqps://` only). PEM files; without `cacertfile` the system's trusted CAs.
    std::optional<std::string> cacertfile{};
    std::optional<std::string> certfile{};
    std::optional<std::string> keyfile{};
    /// `verify=verify_peer` (the default): the server's certificate must chain to a trusted CA
    /// and name `server_name` (or the host). `verify=verify_none` checks nothing: for tests.
    bool verify_peer = true;
    /// `server_name_indication=<name>`: the name sent in SNI and checked in the certificate
    /// instead of the host; `server_name_indication=disable` sends no SNI.
    std::optional<std::string> server_name{};
    /// The endpoints after the first (`host`, `port`), in the order written; empty for a single
    /// broker. Last, so that aggregate initialization written before it still compiles.
    std::vector<endpoint> more_endpoints{};

    friend bool operator==(const url&, const url&) = default;

    /// Every endpoint: `{host, port}` first, then `more_endpoints`, in the order written.
    std::vector<endpoint> endpoints() const;
    /// Replaces every endpoint: the first of `list` becomes `host` and `port`, the others
    /// `more_endpoints`. Throws `letterbox::error` (`errc::invalid_argument`) when `list` is
    /// empty, longer than `max_endpoints`, holds an empty host or port 0, or the same host and
    /// port twice; the URL is then unchanged.
    void set_endpoints(std::vector<endpoint> list);

    /// The URL with the password replaced by `***`, every endpoint shown
    /// (`amqp://ops:***@h1:5672,h2:5673/vhost`): what logs and error messages may show.
    std::string redacted() const;
};

/// Parses `text`; on failure returns `std::nullopt` and sets `why` (never containing the
/// password).
std::optional<url> try_parse_url(std::string_view text, std::string& why);

/// Parses `text`; throws `letterbox::error` (`errc::invalid_argument`) with the reason.
url parse_url(std::string_view text);

/// `text`, meant as an AMQP URL but perhaps malformed, with everything that could be a password
/// replaced by `***`: how to show a URL that `try_parse_url` refused (a parsed one has
/// `url::redacted()`). A password may hold any character, including `/ ? # @ :`, so no
/// delimiter after the user name can be trusted to end it, and the rules err towards hiding:
///
/// - The authority starts after `scheme://` (a scheme of letters, digits, `+ - .`), or at the
///   start of the text when there is no such scheme (`ops:s3cret@host`, `amqp:/ops:...`).
/// - With an `@` after that start, everything from there to the **last** `@` is userinfo and
///   is hidden, except a plain user name (letters, digits, `- . _ ~`) before its first `:`:
///   `amqp://ops:Sup3r+ss/wd==@h:5672/` gives `amqp://ops:***@h:5672/`, and
///   `amqp://o%70s:pw@h` gives `amqp://***@h`.
/// - Without an `@`, a `:` followed by something that is not a port number (before the next
///   `/ ? #`, or `,` between endpoints) may start a password whose `@host` is missing:
///   everything after it is hidden (`amqp://ops:s3cret` gives `amqp://ops:***`). A bracketed
///   IPv6 host is skipped first; an unclosed `[` hides everything after it.
///
/// What remains (host, port, vhost, query) is shown as it was written.
std::string redact_url_text(std::string_view text);

namespace detail {

using letterbox::detail::percent_decode;

template <class T>
std::optional<T> parse_number(std::string_view s) {
    T value{};
    if (s.empty())
        return std::nullopt;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc{} || end != s.data() + s.size())
        return std::nullopt;
    return value;
}

inline std::string percent_encode(std::string_view s) {
    static constexpr char digits[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
        if (plain) {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += digits[c >> 4];
            out += digits[c & 0xF];
        }
    }
    return out;
}

} // namespace detail

namespace detail {

/// Where the authority of `text` starts: after a `scheme://`, else 0.
inline std::size_t authority_start(std::string_view text) noexcept {
    const auto sep = text.find("://");
    if (sep == std::string_view::npos || sep == 0)
        return 0;
    const auto is_alpha = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    };
    if (!is_alpha(text[0]))
        return 0;
    for (std::size_t i = 1; i < sep; ++i) {
        const char c = text[i];
        if (!is_alpha(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.')
            return 0;
    }
    return sep + 3;
}

/// Whether `user` is a user name that cannot hide part of a password: unreserved characters
/// only (no `%`, which could encode anything).
inline bool plain_user(std::string_view user) noexcept {
    if (user.empty())
        return false;
    for (char c : user) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
        if (!ok)
            return false;
    }
    return true;
}

/// Whether `s` holds only decimal digits (an empty `s` does).
inline bool all_digits(std::string_view s) noexcept {
    for (char c : s)
        if (c < '0' || c > '9')
            return false;
    return true;
}

/// Whether two host names are the same, ASCII letters compared case-insensitively.
inline bool same_host(std::string_view a, std::string_view b) noexcept {
    const auto lower = [](char c) {
        return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    };
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i]))
            return false;
    return true;
}

/// Why `list` cannot be the endpoints of a URL, or nothing. Endpoints are named by their
/// position only: in a malformed URL their text may hold part of a password.
inline std::optional<std::string> check_endpoints(const std::vector<endpoint>& list) {
    if (list.empty())
        return "no endpoint";
    if (list.size() > url::max_endpoints)
        return "at most " + std::to_string(url::max_endpoints) + " endpoints, not " +
               std::to_string(list.size());
    const auto name = [&](std::size_t i) {
        return list.size() == 1
                   ? std::string("the endpoint")
                   : "endpoint " + std::to_string(i + 1) + " of " + std::to_string(list.size());
    };
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (list[i].host.empty())
            return name(i) + " has no host";
        if (list[i].port == 0)
            return name(i) + ": the port must be a number from 1 to 65535";
        if (list[i].host.find(',') != std::string::npos)
            return name(i) + ": a host cannot hold ','";
        for (std::size_t j = 0; j < i; ++j)
            if (list[j].port == list[i].port && same_host(list[j].host, list[i].host))
                return "endpoints " + std::to_string(j + 1) + " and " + std::to_string(i + 1) +
                       " are the same host and port";
    }
    return std::nullopt;
}

/// Parses one endpoint, `host[:port]` or `[IPv6][:port]`, into `e`, whose members hold the
/// defaults on entry (an empty host keeps the default); the reason when it is malformed.
inline std::optional<std::string> parse_endpoint(std::string_view text, endpoint& e) {
    std::string_view host = text, port;
    if (text.starts_with('[')) {
        auto close = text.find(']');
        if (close == std::string_view::npos)
            return "an IPv6 host needs a closing ']'";
        host = text.substr(1, close - 1);
        std::string_view after = text.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':')
                return "unexpected text after the IPv6 host";
            port = after.substr(1);
            if (port.empty())
                return "empty port";
        }
    } else if (auto colon = text.rfind(':'); colon != std::string_view::npos) {
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (port.empty())
            return "empty port";
    }
    if (!host.empty()) {
        auto decoded = percent_decode(host);
        if (!decoded)
            return "bad percent-escape in the host";
        e.host = std::move(*decoded);
    }
    if (!port.empty()) {
        auto p = parse_number<std::uint16_t>(port);
        if (!p || *p == 0)
            return "the port must be a number from 1 to 65535";
        e.port = *p;
    }
    return std::nullopt;
}

/// Parses the hosts of an authority (what follows the userinfo): one endpoint, whose host
/// defaults to `u.host`, or several separated by commas, each with a host. Sets `u`'s
/// endpoints, or returns the reason. The count is checked before anything is parsed.
inline std::optional<std::string> parse_endpoints(std::string_view hosts, url& u) {
    const auto commas = static_cast<std::size_t>(std::count(hosts.begin(), hosts.end(), ','));
    if (commas >= url::max_endpoints)
        return "at most " + std::to_string(url::max_endpoints) + " endpoints, not " +
               std::to_string(commas + 1);
    std::vector<endpoint> list;
    list.reserve(commas + 1);
    for (std::size_t pos = 0; pos <= hosts.size();) {
        const auto comma = std::min(hosts.find(',', pos), hosts.size());
        const auto text = hosts.substr(pos, comma - pos);
        const auto where = commas == 0 ? std::string()
                                       : "endpoint " + std::to_string(list.size() + 1) + " of " +
                                             std::to_string(commas + 1);
        if (commas != 0 && text.empty())
            return where + " is empty";
        endpoint e{commas == 0 ? u.host : std::string(), u.port};
        if (auto why = parse_endpoint(text, e))
            return commas == 0 ? *why : where + ": " + *why;
        list.push_back(std::move(e));
        pos = comma + 1;
    }
    if (auto why = check_endpoints(list))
        return why;
    u.host = std::move(list.front().host);
    u.port = list.front().port;
    u.more_endpoints.assign(std::make_move_iterator(list.begin() + 1),
                            std::make_move_iterator(list.end()));
    return std::nullopt;
}

} // namespace detail

inline std::string redact_url_text(std::string_view text) {
    const std::size_t start = detail::authority_start(text);
    std::string out(text.substr(0, start));
    const std::string_view rest = text.substr(start);
    if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
        const std::string_view info = rest.substr(0, at);
        const auto colon = info.find(':');
        const std::string_view user = info.substr(0, colon);
        if (!info.empty()) { // a leading '@' has nothing before it to hide
            if (!detail::plain_user(user))
                out += "***";
            else if (colon == std::string_view::npos)
                out += user; // a user name and no password
            else
                out += std::string(user) + ":***";
        }
        out += rest.substr(at);
        return out;
    }
    // No '@': look for a ':' that cannot start a port. In the authority, each comma-separated
    // endpoint may have one (after a bracketed IPv6 host, skipped first); after it, any ':'
    // before the next '/', '?' or '#' counts.
    const auto authority_end = std::min(rest.find_first_of("/?#"), rest.size());
    const auto hide_from = [&](std::size_t colon) {
        out += rest.substr(0, colon + 1);
        out += "***";
        return out;
    };
    for (std::size_t pos = 0;;) {
        const auto end = std::min(rest.find(',', pos), authority_end);
        std::size_t from = pos;
        if (pos < end && rest[pos] == '[') {
            const auto close = rest.find(']', pos);
            if (close == std::string_view::npos || close > end)
                return out + std::string(rest.substr(0, pos)) + "[***";
            from = close + 1;
        }
        if (const auto colon = rest.find(':', from);
            colon < end && !detail::all_digits(rest.substr(colon + 1, end - colon - 1)))
            return hide_from(colon);
        if (end == authority_end)
            break;
        pos = end + 1;
    }
    for (auto colon = rest.find(':', authority_end); colon != std::string_view::npos;
         colon = rest.find(':', colon + 1)) {
        const auto end = rest.find_first_of("/?#", colon + 1);
        const auto port = rest.substr(
            colon + 1, end == std::string_view::npos ? std::string_view::npos : end - colon - 1);
        if (!detail::all_digits(port))
            return hide_from(colon);
    }
    out += rest;
    return out;
}

inline std::vector<endpoint> url::endpoints() const {
    std::vector<endpoint> all;
    all.reserve(1 + more_endpoints.size());
    all.push_back(endpoint{host, port});
    all.insert(all.end(), more_endpoints.begin(), more_endpoints.end());
    return all;
}

inline void url::set_endpoints(std::vector<endpoint> list) {
    if (auto why = detail::check_endpoints(list))
        throw error(errc::invalid_argument, "invalid AMQP endpoints: " + *why);
    host = std::move(list.front().host);
    port = list.front().port;
    more_endpoints.assign(std::make_move_iterator(list.begin() + 1),
                          std::make_move_iterator(list.end()));
}

inline std::string url::redacted() const {
    std::string out = tls ? "amqps://" : "amqp://";
    out += detail::percent_encode(user) + ":***@";
    out += endpoint{host, port}.to_string();
    for (const auto& e : more_endpoints)
        out += "," + e.to_string();
    out += "/" + detail::percent_encode(vhost);
    return out;
}

inline std::optional<url> try_parse_url(std::string_view text, std::string& why) {
    // An '@' after the first '/', '?' or '#' of the authority: most likely a password holding
    // one of them unencoded, which then ends the authority early. Errors say so, and echo
    // nothing from the text (a query key may then be part of the password).
    const auto delimiter = text.find_first_of("/?#", detail::authority_start(text));
    const bool may_split_password =
        delimiter != std::string_view::npos && text.find('@', delimiter) != std::string_view::npos;
    auto fail = [&](std::string reason) -> std::optional<url> {
        why = "invalid AMQP URL: " + std::move(reason);
        if (may_split_password)
            why += "; a password that holds '/', '?', '#' or '@' must be percent-encoded (%2F, "
                   "%3F, %23, %40)";
        return std::nullopt;
    };
    url u;
    std::string_view rest = text;
    if (rest.starts_with("amqp://")) {
        rest.remove_prefix(7);
    } else if (rest.starts_with("amqps://")) {
        rest.remove_prefix(8);
        u.tls = true;
        u.port = 5671;
    } else {
        return fail("the scheme must be amqp:// or amqps://");
    }
    std::string_view query;
    if (auto q = rest.find('?'); q != std::string_view::npos) {
        query = rest.substr(q + 1);
        rest = rest.substr(0, q);
    }
    std::string_view path;
    bool has_path = false;
    if (auto slash = rest.find('/'); slash != std::string_view::npos) {
        path = rest.substr(slash + 1);
        rest = rest.substr(0, slash);
        has_path = true;
    }
    // rest = [userinfo@]host[:port]; the last '@' ends the userinfo (a password may not hold
    // a raw '@', but be lenient about which one ends it).
    if (auto at = rest.rfind('@'); at != std::string_view::npos) {
        std::string_view info = rest.substr(0, at);
        rest = rest.substr(at + 1);
        std::string_view user = info, password;
        bool has_password = false;
        if (auto colon = info.find(':'); colon != std::string_view::npos) {
            user = info.substr(0, colon);
            password = info.substr(colon + 1);
            has_password = true;
        }
        auto du = detail::percent_decode(user);
        if (!du)
            return fail("bad percent-escape in the user name");
        u.user = std::move(*du);
        if (has_password) {
            auto dp = detail::percent_decode(password);
            if (!dp)
                return fail("bad percent-escape in the password");
            u.password = std::move(*dp);
        }
    }
    if (auto why = detail::parse_endpoints(rest, u))
        return fail(std::move(*why));
    if (has_path && !path.empty()) {
        if (path.find('/') != std::string_view::npos)
            return fail("the vhost is one path segment; write '/' inside it as %2F");
        auto dv = detail::percent_decode(path);
        if (!dv)
            return fail("bad percent-escape in the vhost");
        u.vhost = std::move(*dv);
    }
    while (!query.empty()) {
        auto amp = query.find('&');
        std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        if (pair.empty())
            continue;
        auto eq = pair.find('=');
        std::string_view key = pair.substr(0, eq);
        std::string_view value =
            eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
        if (key == "heartbeat") {
            auto v = detail::parse_number<std::uint16_t>(value);
            if (!v)
                return fail("heartbeat must be a number of seconds from 0 to 65535");
            u.heartbeat = std::chrono::seconds{*v};
        } else if (key == "frame_max") {
            auto v = detail::parse_number<std::uint32_t>(value);
            if (!v || (*v != 0 && *v < 4096))
                return fail("frame_max must be 0 or at least 4096 bytes");
            u.frame_max = *v;
        } else if (key == "channel_max") {
            auto v = detail::parse_number<std::uint16_t>(value);
            if (!v)
                return fail("channel_max must be a number from 0 to 65535");
            u.channel_max = *v;
        } else if (key == "connection_timeout") {
            auto v = detail::parse_number<std::uint32_t>(value);
            if (!v || *v == 0)
                return fail("connection_timeout must be a positive number of milliseconds");
            u.connection_timeout = std::chrono::milliseconds{*v};
        } else if (key == "cacertfile" || key == "certfile" || key == "keyfile" ||
                   key == "verify" || key == "server_name_indication") {
            if (!u.tls)
                return fail("'" + std::string(key) + "' is a TLS parameter: it needs amqps://");
            auto decoded = detail::percent_decode(value);
            if (!decoded || decoded->empty())
                return fail("'" + std::string(key) + "' needs a value (percent-encoded)");
            if (key == "cacertfile")
                u.cacertfile = std::move(*decoded);
            else if (key == "certfile")
                u.certfile = std::move(*decoded);
            else if (key == "keyfile")
                u.keyfile = std::move(*decoded);
            else if (key == "server_name_indication")
                u.server_name = std::move(*decoded);
            else if (*decoded == "verify_peer" || *decoded == "verify_none")
                u.verify_peer = *decoded == "verify_peer";
            else
                return fail("verify must be verify_peer or verify_none");
        } else {
            // A '?' in an unencoded password starts the "query" early, and the rest of the
            // password is then a key: name it only when that cannot be.
            return fail(
                "unknown query parameter" +
                (may_split_password ? std::string() : " '" + detail::percent_encode(key) + "'") +
                " (known: heartbeat, frame_max, channel_max, connection_timeout, "
                "cacertfile, certfile, keyfile, verify, server_name_indication)");
        }
    }
    return u;
}

inline url parse_url(std::string_view text) {
    std::string why;
    if (auto u = try_parse_url(text, why))
        return *u;
    throw error(errc::invalid_argument, why);
}

} // namespace letterbox::amqp
