// SPDX-License-Identifier: BSL-1.0
#pragma once

// Tarjan's strongly connected components, iterative (no recursion on the depth of untrusted
// input): private to lint/.

#include <letterbox/config.hpp>

#include <algorithm>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::lint::detail {

/// The components of the graph `edges` (node i's successors are `edges[i]`, each < the node
/// count) that contain a cycle: more than one node, or one node with an edge to itself. Each
/// component's nodes ascending; the components ordered by their smallest node. O(nodes +
/// edges) time and memory.
inline std::vector<std::vector<std::size_t>>
cyclic_components(std::span<const std::span<const std::size_t>> edges) {
    const std::size_t n = edges.size();
    constexpr std::size_t unvisited = static_cast<std::size_t>(-1);
    std::vector<std::size_t> index(n, unvisited), low(n, 0);
    std::vector<bool> on_stack(n, false);
    std::vector<std::size_t> stack;
    std::vector<std::pair<std::size_t, std::size_t>> calls; // node, next edge
    std::vector<std::vector<std::size_t>> out;
    std::size_t counter = 0;
    auto enter = [&](std::size_t v) {
        index[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = true;
        calls.emplace_back(v, 0);
    };
    for (std::size_t s = 0; s < n; ++s) {
        if (index[s] != unvisited)
            continue;
        enter(s);
        while (!calls.empty()) {
            auto& [v, next] = calls.back();
            if (next < edges[v].size()) {
                const std::size_t w = edges[v][next++];
                if (index[w] == unvisited)
                    enter(w); // invalidates v and next: the loop reads them again
                else if (on_stack[w])
                    low[v] = std::min(low[v], index[w]);
                continue;
            }
            const std::size_t done = v;
            calls.pop_back();
            if (!calls.empty())
                low[calls.back().first] = std::min(low[calls.back().first], low[done]);
            if (low[done] != index[done])
                continue;
            std::vector<std::size_t> component;
            std::size_t w = 0;
            do {
                w = stack.back();
                stack.pop_back();
                on_stack[w] = false;
                component.push_back(w);
            } while (w != done);
            const bool self_loop =
                std::find(edges[done].begin(), edges[done].end(), done) != edges[done].end();
            if (component.size() > 1 || self_loop) {
                std::sort(component.begin(), component.end());
                out.push_back(std::move(component));
            }
        }
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.front() < b.front(); });
    return out;
}

} // namespace letterbox::lint::detail
