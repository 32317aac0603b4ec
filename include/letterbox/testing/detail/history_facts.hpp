// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/history_text.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/history_event.hpp>
#include <letterbox/testing/invariant_violation.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

using consumer_and_id = std::pair<std::string, message_id>;

struct committed_message {
    outbox_row row;
    std::size_t event = 0; // the transaction_committed event that first committed it
};

// What the checkers need to know about a history, indexed once. Maps are ordered, so every
// iteration (and so every list of violations) is deterministic.
class history_facts {
public:
    explicit history_facts(const history& h)
        : h_(h) {
        for (std::size_t i = 0; i < h.size(); ++i) {
            std::visit([this, i](const auto& e) { note(i, e); }, h[i].what);
            if (const auto id = event_message_id(h[i].what)) {
                mentions_[*id].push_back(i);
            }
        }
    }

    const history& events() const noexcept { return h_; }

    // Every committed message, in commit order (a message committed twice counts once).
    const std::vector<committed_message>& committed() const noexcept { return committed_; }
    const committed_message* find_committed(const message_id& id) const {
        const auto it = committed_index_.find(id);
        return it == committed_index_.end() ? nullptr : &committed_[it->second];
    }
    std::optional<std::size_t> rolled_back_at(const message_id& id) const {
        return find_first(rolled_back_, id);
    }

    // Events by (consumer, message id).
    const std::map<consumer_and_id, std::vector<std::size_t>>& effects() const noexcept {
        return effects_;
    }
    const std::map<consumer_and_id, std::vector<std::size_t>>& deliveries() const noexcept {
        return deliveries_;
    }
    std::vector<std::size_t> effects_of(const std::string& consumer, const message_id& id) const {
        return find_all(effects_, consumer_and_id{consumer, id});
    }
    std::vector<std::size_t> deliveries_of(const std::string& consumer,
                                           const message_id& id) const {
        return find_all(deliveries_, consumer_and_id{consumer, id});
    }

    // The first dead letter with a reason that settles `id` for `consumer`: one by that
    // consumer, or one before any consumer (empty consumer).
    std::optional<std::size_t> dead_lettered_at(const std::string& consumer,
                                                const message_id& id) const {
        return earliest(find_first(dead_letters_, consumer_and_id{consumer, id}),
                        find_first(dead_letters_, consumer_and_id{std::string{}, id}));
    }
    // Dead letters of `id` for `consumer` (or for all) that have no reason.
    std::vector<std::size_t> reasonless_dead_letters(const std::string& consumer,
                                                     const message_id& id) const {
        auto all = find_all(reasonless_, consumer_and_id{consumer, id});
        const auto global = find_all(reasonless_, consumer_and_id{std::string{}, id});
        all.insert(all.end(), global.begin(), global.end());
        std::sort(all.begin(), all.end());
        return all;
    }

    // The first event that settles `id` for `consumer`: its first effect there, or its first
    // dead letter with a reason.
    std::optional<std::size_t> settled_at(const std::string& consumer, const message_id& id) const {
        const auto effects = find_first(effects_, consumer_and_id{consumer, id});
        return earliest(effects, dead_lettered_at(consumer, id));
    }
    std::optional<std::size_t> applied_at(const std::string& consumer, const message_id& id) const {
        return find_first(effects_, consumer_and_id{consumer, id});
    }

    // The fault events, in order; the ids that faults target, and which of those are poison.
    const std::vector<std::size_t>& faults() const noexcept { return faults_; }
    const std::vector<message_id>& poison() const noexcept { return poison_; }
    std::optional<std::size_t> targeted_at(const message_id& id) const {
        return find_first(targeted_, id);
    }

    // The last event that names `id` (not counting transactions).
    std::optional<std::size_t> last_mention(const message_id& id) const {
        const auto it = mentions_.find(id);
        if (it == mentions_.end() || it->second.empty()) {
            return std::nullopt;
        }
        return it->second.back();
    }
    // The events that name `id` (not counting transactions), in order.
    std::vector<std::size_t> mentions(const message_id& id) const {
        return find_all(mentions_, id);
    }

    // `#<index> <text form>`, for explanations.
    std::string cite(std::size_t index) const {
        return "#" + std::to_string(index) + " " + to_string(h_[index]);
    }

private:
    template <class Key>
    static std::optional<std::size_t> find_first(const std::map<Key, std::vector<std::size_t>>& map,
                                                 const Key& key) {
        const auto it = map.find(key);
        if (it == map.end() || it->second.empty()) {
            return std::nullopt;
        }
        return it->second.front();
    }
    template <class Key>
    static std::vector<std::size_t> find_all(const std::map<Key, std::vector<std::size_t>>& map,
                                             const Key& key) {
        const auto it = map.find(key);
        return it == map.end() ? std::vector<std::size_t>{} : it->second;
    }
    static std::optional<std::size_t> earliest(std::optional<std::size_t> a,
                                               std::optional<std::size_t> b) {
        if (a && b) {
            return std::min(*a, *b);
        }
        return a ? a : b;
    }

    void note(std::size_t i, const transaction_committed& e) {
        for (const auto& row : e.rows) {
            if (committed_index_.emplace(row.id, committed_.size()).second) {
                committed_.push_back(committed_message{row, i});
            }
        }
    }
    void note(std::size_t i, const transaction_rolled_back& e) {
        for (const auto& row : e.rows) {
            rolled_back_[row.id].push_back(i);
        }
    }
    void note(std::size_t i, const broker_delivered& e) {
        deliveries_[{e.consumer, e.id}].push_back(i);
    }
    void note(std::size_t i, const effect_applied& e) { effects_[{e.consumer, e.id}].push_back(i); }
    void note(std::size_t i, const dead_lettered& e) {
        auto& target = e.reason.empty() ? reasonless_ : dead_letters_;
        target[{e.consumer, e.id}].push_back(i);
    }
    void note(std::size_t i, const fault_injected& e) {
        faults_.push_back(i);
        if (!e.id) {
            return;
        }
        targeted_[*e.id].push_back(i);
        if (e.kind == fault_kind::poison_message &&
            std::find(poison_.begin(), poison_.end(), *e.id) == poison_.end()) {
            poison_.push_back(*e.id);
        }
    }
    template <class Event>
    void note(std::size_t, const Event&) {}

    const history& h_;
    std::vector<committed_message> committed_;
    std::map<message_id, std::size_t> committed_index_;
    std::map<message_id, std::vector<std::size_t>> rolled_back_;
    std::map<consumer_and_id, std::vector<std::size_t>> effects_;
    std::map<consumer_and_id, std::vector<std::size_t>> deliveries_;
    std::map<consumer_and_id, std::vector<std::size_t>> dead_letters_;
    std::map<consumer_and_id, std::vector<std::size_t>> reasonless_;
    std::vector<std::size_t> faults_;
    std::map<message_id, std::vector<std::size_t>> targeted_;
    std::vector<message_id> poison_;
    std::map<message_id, std::vector<std::size_t>> mentions_;
};

// "message <id> (aggregate "a", sequence 3)" or "message <id>" when the row is unknown.
inline std::string describe_message(const history_facts& facts, const message_id& id) {
    std::string out = "message " + id_text(id);
    if (const auto* c = facts.find_committed(id)) {
        out += " (aggregate " + quote_text(c->row.aggregate) + ", sequence " +
               std::to_string(c->row.sequence) + ")";
    }
    return out;
}

// Adds `\n  <cited event>` for `index`, and records the index in the violation.
inline void cite(invariant_violation& v, const history_facts& facts, std::size_t index,
                 std::string_view label = {}) {
    v.explanation += "\n  ";
    if (!label.empty()) {
        v.explanation += label;
        v.explanation += ": ";
    }
    v.explanation += facts.cite(index);
    v.events.push_back(index);
}

// Violations in the order of the first event each cites (stable for ties).
inline void sort_by_first_event(std::vector<invariant_violation>& violations) {
    std::stable_sort(violations.begin(), violations.end(), [](const auto& a, const auto& b) {
        const auto first = [](const invariant_violation& v) {
            return v.events.empty() ? std::size_t{0} : v.events.front();
        };
        return first(a) < first(b);
    });
}

} // namespace letterbox::testing::detail
