// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/ops/counter.hpp>
#include <letterbox/ops/detail/prometheus_text.hpp>
#include <letterbox/ops/gauge.hpp>
#include <letterbox/ops/histogram.hpp>
#include <letterbox/ops/metric_labels.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// A set of metrics, rendered in the Prometheus text exposition format, version 0.0.4 (what
/// `GET /metrics` of `http_server` serves). Metrics are grouped in families: one name, one
/// type, one help text, and one time series per distinct set of labels.
///
/// Two kinds of series:
/// - *owned*: `make_counter`, `make_gauge`, `make_histogram` return a reference to a metric the
///   registry keeps (the same one for the same name and labels); the code being measured
///   updates it;
/// - *functions*: `add_counter_function` and `add_gauge_function` register a callable that
///   `render()` calls to read the current value: for state that lives elsewhere (rows in a
///   store, a queue's depth, a handler's statistics).
///
/// Names and label names are checked (Prometheus' rules); help texts and label values are
/// escaped when rendered. A name registered again with another type or help text, an invalid
/// name, or a function series whose labels another series of its family already has, throws
/// `letterbox::error` (`errc::invalid_argument`).
///
/// Lifetime: references returned stay valid as long as the registry. Functions must stay
/// callable as long as the registry renders.
///
/// Thread safety: every member may be called from any thread. `render()` calls the functions
/// on the calling thread, outside the registry's lock; they must be quick and must not throw
/// (a function that throws is rendered as `NaN`).
///
/// Example:
///
///     letterbox::ops::metrics_registry reg;
///     auto& sent = reg.make_counter("app_emails_sent_total", "E-mails sent");
///     sent.add();
///     reg.add_gauge_function("app_queue_depth", "Messages waiting", {{"queue", "mail"}},
///                            [&] { return double(queue.size()); });
///     std::string text = reg.render();
class metrics_registry {
public:
    metrics_registry() = default;
    metrics_registry(const metrics_registry&) = delete;
    metrics_registry& operator=(const metrics_registry&) = delete;

    counter& make_counter(std::string_view name, std::string_view help,
                          const metric_labels& labels = {}) {
        return *std::get<std::shared_ptr<counter>>(
            find_or_add(name, help, type::counter, labels,
                        [] { return series_value{std::make_shared<counter>()}; }));
    }

    gauge& make_gauge(std::string_view name, std::string_view help,
                      const metric_labels& labels = {}) {
        return *std::get<std::shared_ptr<gauge>>(find_or_add(name, help, type::gauge, labels, [] {
            return series_value{std::make_shared<gauge>()};
        }));
    }

    /// A histogram with `bounds` (see `histogram`); the bounds of a series already made are
    /// kept.
    histogram& make_histogram(std::string_view name, std::string_view help,
                              std::vector<double> bounds = histogram::default_buckets(),
                              const metric_labels& labels = {}) {
        return *std::get<std::shared_ptr<histogram>>(
            find_or_add(name, help, type::histogram, labels, [&] {
                return series_value{std::make_shared<histogram>(std::move(bounds))};
            }));
    }

    void add_counter_function(std::string_view name, std::string_view help,
                              const metric_labels& labels, std::function<double()> read) {
        add_function(name, help, type::counter, labels, std::move(read));
    }

    void add_gauge_function(std::string_view name, std::string_view help,
                            const metric_labels& labels, std::function<double()> read) {
        add_function(name, help, type::gauge, labels, std::move(read));
    }

    /// Every family in registration order, each with `# HELP` and `# TYPE` lines and its
    /// series in registration order; ends with a line feed.
    std::string render() const;

private:
    enum class type : std::uint8_t { counter, gauge, histogram };
    using series_value =
        std::variant<std::shared_ptr<counter>, std::shared_ptr<gauge>, std::shared_ptr<histogram>,
                     std::shared_ptr<const std::function<double()>>>;
    struct series {
        metric_labels labels;
        series_value value;
    };
    struct family {
        std::string name;
        std::string help;
        type kind;
        std::vector<series> members;
    };

    template <class Make>
    series_value find_or_add(std::string_view name, std::string_view help, type kind,
                             const metric_labels& labels, Make make);
    void add_function(std::string_view name, std::string_view help, type kind,
                      const metric_labels& labels, std::function<double()> read);
    family& family_for(std::string_view name, std::string_view help, type kind);
    static void check_labels(const metric_labels& labels);

    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<family>> families_;
};

} // namespace letterbox::ops

#include <letterbox/ops/impl/metrics_registry.hpp>
