// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/ops/metrics_registry.hpp>

#include <cmath>
#include <type_traits>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

inline void metrics_registry::check_labels(const metric_labels& labels) {
    for (std::size_t i = 0; i < labels.size(); ++i) {
        if (!detail::is_label_name(labels[i].first))
            throw error(errc::invalid_argument,
                        "invalid metric label name '" + labels[i].first + "'");
        for (std::size_t j = 0; j < i; ++j) {
            if (labels[j].first == labels[i].first)
                throw error(errc::invalid_argument,
                            "metric label '" + labels[i].first + "' given twice");
        }
    }
}

inline metrics_registry::family& metrics_registry::family_for(std::string_view name,
                                                              std::string_view help, type kind) {
    for (auto& f : families_) {
        if (f->name != name)
            continue;
        if (f->kind != kind || f->help != help)
            throw error(errc::invalid_argument,
                        "metric '" + f->name + "' is already registered with another type or help");
        return *f;
    }
    if (!detail::is_metric_name(name))
        throw error(errc::invalid_argument, "invalid metric name '" + std::string(name) + "'");
    families_.push_back(
        std::make_unique<family>(family{std::string(name), std::string(help), kind, {}}));
    return *families_.back();
}

template <class Make>
metrics_registry::series_value
metrics_registry::find_or_add(std::string_view name, std::string_view help, type kind,
                              const metric_labels& labels, Make make) {
    check_labels(labels);
    std::lock_guard lock(mutex_);
    auto& f = family_for(name, help, kind);
    for (auto& s : f.members) {
        if (s.labels != labels)
            continue;
        if (std::holds_alternative<std::shared_ptr<const std::function<double()>>>(s.value))
            throw error(errc::invalid_argument,
                        "metric '" + f.name + "' already has a function series with these labels");
        return s.value;
    }
    f.members.push_back(series{labels, make()});
    return f.members.back().value;
}

inline void metrics_registry::add_function(std::string_view name, std::string_view help, type kind,
                                           const metric_labels& labels,
                                           std::function<double()> read) {
    check_labels(labels);
    if (!read)
        throw error(errc::invalid_argument, "a metric function must not be empty");
    std::lock_guard lock(mutex_);
    auto& f = family_for(name, help, kind);
    for (const auto& s : f.members) {
        if (s.labels == labels)
            throw error(errc::invalid_argument,
                        "metric '" + f.name + "' already has a series with these labels");
    }
    f.members.push_back(
        series{labels, std::make_shared<const std::function<double()>>(std::move(read))});
}

namespace detail {

inline void append_series_name(std::string& out, std::string_view name, std::string_view suffix,
                               const metric_labels& labels, std::string_view le = {}) {
    out += name;
    out += suffix;
    if (labels.empty() && le.empty())
        return;
    out += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
        if (!first)
            out += ',';
        first = false;
        out += k;
        out += "=\"";
        append_label_value(out, v);
        out += '"';
    }
    if (!le.empty()) {
        if (!first)
            out += ',';
        out += "le=\"";
        out += le;
        out += '"';
    }
    out += '}';
}

} // namespace detail

inline std::string metrics_registry::render() const {
    // Copy the structure under the lock; read the values (and call the functions) outside it.
    struct row {
        const family* f;
        std::vector<series> members;
    };
    std::vector<row> rows;
    {
        std::lock_guard lock(mutex_);
        rows.reserve(families_.size());
        for (const auto& f : families_)
            rows.push_back({f.get(), f->members});
    }
    std::string out;
    for (const auto& r : rows) {
        const family* f = r.f; // not a structured binding: clang 14 cannot capture one
        out += "# HELP ";
        out += f->name;
        out += ' ';
        detail::append_help(out, f->help);
        out += "\n# TYPE ";
        out += f->name;
        out += f->kind == type::counter ? " counter\n"
               : f->kind == type::gauge ? " gauge\n"
                                        : " histogram\n";
        for (const auto& s : r.members) {
            std::visit(
                [&](const auto& p) {
                    using T = std::decay_t<decltype(*p)>;
                    if constexpr (std::is_same_v<T, histogram>) {
                        const auto snap = p->read();
                        std::uint64_t cumulative = 0;
                        std::string le;
                        for (std::size_t i = 0; i < snap.bounds.size(); ++i) {
                            cumulative += snap.counts[i];
                            le.clear();
                            detail::append_number(le, snap.bounds[i]);
                            detail::append_series_name(out, f->name, "_bucket", s.labels, le);
                            out += ' ';
                            detail::append_number(out, static_cast<double>(cumulative));
                            out += '\n';
                        }
                        detail::append_series_name(out, f->name, "_bucket", s.labels, "+Inf");
                        out += ' ';
                        detail::append_number(out, static_cast<double>(snap.count));
                        out += '\n';
                        detail::append_series_name(out, f->name, "_sum", s.labels);
                        out += ' ';
                        detail::append_number(out, snap.sum);
                        out += '\n';
                        detail::append_series_name(out, f->name, "_count", s.labels);
                        out += ' ';
                        detail::append_number(out, static_cast<double>(snap.count));
                        out += '\n';
                    } else {
                        double v = 0;
                        if constexpr (std::is_same_v<T, std::function<double()>>) {
                            try {
                                v = (*p)();
                            } catch (...) {
                                v = std::nan("");
                            }
                        } else {
                            v = p->value();
                        }
                        detail::append_series_name(out, f->name, "", s.labels);
                        out += ' ';
                        detail::append_number(out, v);
                        out += '\n';
                    }
                },
                s.value);
        }
    }
    return out;
}

} // namespace letterbox::ops
