// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// One message of a causal tree, and the messages it caused (`causal_tree`).
struct causal_node {
    message msg{};
    std::vector<causal_node> caused{};
};

/// The messages of `history` that belong to the conversation `conversation_id` (their
/// `x-letterbox-conversation-id`, set by `caused_by`), as the trees of what caused what: each
/// message under the one its `x-letterbox-causation-id` names, in the order of `history`. A
/// message whose cause is not in the history is a root. A message recorded more than once (a
/// redelivery, a republish after a lost confirm) counts once, where it first appears.
///
/// `history` is any record of the messages sent: the relays' `relay_event`s, a consumer's
/// `consumer_event`s, the simulation's history. With every service's messages in it, the trees
/// answer "what happened to this order, and why" (docs/tracing.md).
inline std::vector<causal_node> causal_tree(std::span<const message> history,
                                            std::string_view conversation_id) {
    std::vector<const message*> members;
    std::set<std::string> seen;
    for (const auto& m : history) {
        if (m.headers.get<std::string>(headers::conversation_id) != conversation_id)
            continue;
        if (seen.insert(letterbox::to_string(m.id)).second)
            members.push_back(&m);
    }
    std::map<std::string, std::vector<const message*>> children;
    std::vector<const message*> roots;
    for (const auto* m : members) {
        const auto cause = m->headers.get<std::string>(headers::causation_id);
        if (cause && seen.contains(*cause) && *cause != letterbox::to_string(m->id))
            children[*cause].push_back(m);
        else
            roots.push_back(m);
    }
    // Built from the roots down; a cycle (ids reused by hand) cannot loop: each message is
    // placed once.
    std::set<std::string> placed;
    std::function<causal_node(const message*)> build = [&](const message* m) {
        causal_node node{*m, {}};
        placed.insert(letterbox::to_string(m->id));
        for (const auto* child : children[letterbox::to_string(m->id)])
            if (!placed.contains(letterbox::to_string(child->id)))
                node.caused.push_back(build(child));
        return node;
    };
    std::vector<causal_node> trees;
    for (const auto* root : roots)
        trees.push_back(build(root));
    return trees;
}

/// `trees` as text: one message a line, `label(message)`, indented by two spaces for each
/// generation below its root.
inline std::string to_text(
    const std::vector<causal_node>& trees, const std::function<std::string(const message&)>& label =
                                               [](const message& m) { return m.type; }) {
    std::string text;
    std::function<void(const causal_node&, std::size_t)> write = [&](const causal_node& node,
                                                                     std::size_t depth) {
        text.append(2 * depth, ' ');
        text += label(node.msg);
        text += '\n';
        for (const auto& child : node.caused)
            write(child, depth + 1);
    };
    for (const auto& tree : trees)
        write(tree, 0);
    return text;
}

} // namespace letterbox
