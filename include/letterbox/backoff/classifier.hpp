// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/detail/check_argument.hpp>
#include <letterbox/backoff/detail/thrown_error_code.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <nlohmann/json.hpp>

#include <functional>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::backoff {

/// Decides whether a failed attempt is transient (worth retrying) or permanent (retrying
/// cannot help: dead-letter it at once). A copyable value; every retry policy holds one.
///
/// The rules are checked in this order, and the first that matches decides:
/// 1. **Store errors are always transient** (built in, cannot be overridden): an error code for
///    which `letterbox::is_store_error` holds, returned in `attempt_failure::error` or thrown as
///    a `std::system_error` (such as `letterbox::error`). The consumer's database failing is
///    not the message's fault, so such a message is never dead-lettered as permanent.
/// 2. **Your rules**, in the order you added them (`permanent<E>()`, `transient(ec)`, ...).
/// 3. **Payload errors are permanent** (defaults, after your rules, so a rule of yours can
///    override them, e.g. `.transient(errc::payload_malformed)`):
///    `errc::payload_malformed`, `errc::payload_type_mismatch` and `errc::payload_unencodable`,
///    returned or thrown as a `std::system_error`; and any `nlohmann::json::exception` (parse
///    and type errors while decoding). A payload that cannot be decoded will not decode on the
///    next attempt either.
/// 4. Anything else is **transient**.
///
/// Because your rules come before the payload defaults, a broad rule such as
/// `transient<std::runtime_error>()` also catches a thrown `letterbox::error` carrying a payload
/// error (it derives from `std::system_error`); add the broad rule after a narrower
/// `permanent(errc::payload_malformed)` if you want both.
///
/// What each kind of rule matches:
/// - `permanent<E>()` / `transient<E>()`: the failure's exception is an `E` or derives from
///   `E` (found by rethrowing `attempt_failure::exception`).
/// - `permanent(std::error_code)` / `permanent(letterbox::errc)`: the failure's error code is
///   exactly that code (same category and value), where "the failure's error code" is
///   `attempt_failure::error` or the code of a thrown `std::system_error`; either may match.
/// - `permanent(std::error_condition)`: the failure's error code compares equal to the
///   condition, through its category's equivalence (e.g. `std::errc::connection_refused`
///   matches the system and generic codes of that name).
/// - `permanent_if(predicate)`: the predicate returns true for the failure.
///
/// The builders return `*this` on an lvalue and a new value on an rvalue, so both forms work:
///
///     backoff::classifier c;
///     c.permanent<std::invalid_argument>().transient(errc::payload_malformed);
///     auto policy = backoff::fixed(250ms, 5).with_classifier(
///         backoff::classifier{}.permanent<std::invalid_argument>());
///
/// Thread safety: `is_permanent` is `const` and may be called concurrently; the predicates you
/// add must allow that too.
class classifier {
public:
    /// A predicate over a failure, for `permanent_if` and `transient_if`.
    using predicate = std::function<bool(const attempt_failure&)>;

    /// Only the built-in rules: store errors transient, payload errors permanent, the rest
    /// transient.
    classifier() = default;

    /// A thrown `E`, or a type derived from it, is permanent.
    template <class E>
    classifier& permanent() & {
        return add_exception<E>(true);
    }
    template <class E>
    [[nodiscard]] classifier permanent() && {
        add_exception<E>(true);
        return std::move(*this);
    }
    /// A thrown `E`, or a type derived from it, is transient.
    template <class E>
    classifier& transient() & {
        return add_exception<E>(false);
    }
    template <class E>
    [[nodiscard]] classifier transient() && {
        add_exception<E>(false);
        return std::move(*this);
    }

    /// Exactly the error code `ec` (returned, or thrown as a `std::system_error`) is permanent.
    classifier& permanent(std::error_code ec) & { return add_code(ec, true); }
    [[nodiscard]] classifier permanent(std::error_code ec) && {
        add_code(ec, true);
        return std::move(*this);
    }
    /// Exactly the error code `ec` (returned, or thrown as a `std::system_error`) is transient.
    classifier& transient(std::error_code ec) & { return add_code(ec, false); }
    [[nodiscard]] classifier transient(std::error_code ec) && {
        add_code(ec, false);
        return std::move(*this);
    }

    /// An error code equivalent to `cond` (returned, or thrown) is permanent.
    classifier& permanent(std::error_condition cond) & { return add_condition(cond, true); }
    [[nodiscard]] classifier permanent(std::error_condition cond) && {
        add_condition(cond, true);
        return std::move(*this);
    }
    /// An error code equivalent to `cond` (returned, or thrown) is transient.
    classifier& transient(std::error_condition cond) & { return add_condition(cond, false); }
    [[nodiscard]] classifier transient(std::error_condition cond) && {
        add_condition(cond, false);
        return std::move(*this);
    }

    /// The letterbox error `e` (returned, or thrown) is permanent.
    classifier& permanent(letterbox::errc e) & { return add_code(make_error_code(e), true); }
    [[nodiscard]] classifier permanent(letterbox::errc e) && {
        add_code(make_error_code(e), true);
        return std::move(*this);
    }
    /// The letterbox error `e` (returned, or thrown) is transient. A store error
    /// (`errc::store_*`) is transient whatever the rules say.
    classifier& transient(letterbox::errc e) & { return add_code(make_error_code(e), false); }
    [[nodiscard]] classifier transient(letterbox::errc e) && {
        add_code(make_error_code(e), false);
        return std::move(*this);
    }

    /// A failure for which `p` returns true is permanent.
    classifier& permanent_if(predicate p) & { return add(std::move(p), true); }
    [[nodiscard]] classifier permanent_if(predicate p) && {
        add(std::move(p), true);
        return std::move(*this);
    }
    /// A failure for which `p` returns true is transient.
    classifier& transient_if(predicate p) & { return add(std::move(p), false); }
    [[nodiscard]] classifier transient_if(predicate p) && {
        add(std::move(p), false);
        return std::move(*this);
    }

    /// Whether `f` is permanent: the first matching rule decides (see the class comment), and
    /// a failure no rule matches is transient. Throws whatever a predicate of yours throws.
    bool is_permanent(const attempt_failure& f) const {
        const std::error_code thrown = detail::thrown_error_code(f.exception);
        if (is_store_error(f.error) || is_store_error(thrown)) {
            return false;
        }
        for (const auto& r : rules_) {
            if (r.matches(f, thrown)) {
                return r.permanent;
            }
        }
        return is_payload_error(f.error) || is_payload_error(thrown) ||
               detail::holds_exception<nlohmann::json::exception>(f.exception);
    }

private:
    struct rule {
        std::function<bool(const attempt_failure&, const std::error_code& thrown)> matches;
        bool permanent;
    };

    static bool is_payload_error(const std::error_code& ec) noexcept {
        return ec == errc::payload_malformed || ec == errc::payload_type_mismatch ||
               ec == errc::payload_unencodable;
    }

    template <class E>
    classifier& add_exception(bool verdict) {
        rules_.push_back({[](const attempt_failure& f, const std::error_code&) {
                              return detail::holds_exception<E>(f.exception);
                          },
                          verdict});
        return *this;
    }

    classifier& add_code(std::error_code ec, bool verdict) {
        rules_.push_back({[ec](const attempt_failure& f, const std::error_code& thrown) {
                              // An empty code is "no error": it never matches.
                              return (f.error && f.error == ec) || (thrown && thrown == ec);
                          },
                          verdict});
        return *this;
    }

    classifier& add_condition(std::error_condition cond, bool verdict) {
        rules_.push_back({[cond](const attempt_failure& f, const std::error_code& thrown) {
                              return (f.error && f.error == cond) || (thrown && thrown == cond);
                          },
                          verdict});
        return *this;
    }

    classifier& add(predicate p, bool verdict) {
        detail::check_argument(static_cast<bool>(p), "backoff::classifier: the predicate is empty");
        rules_.push_back(
            {[p = std::move(p)](const attempt_failure& f, const std::error_code&) { return p(f); },
             verdict});
        return *this;
    }

    std::vector<rule> rules_;
};

} // namespace letterbox::backoff
