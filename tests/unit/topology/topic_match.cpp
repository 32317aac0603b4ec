// SPDX-License-Identifier: BSL-1.0
#include <letterbox/topology/topic_match.hpp>

#include <catch2/catch.hpp>

namespace unit_topology_topic_match {

using letterbox::topology::topic_hash_words;
using letterbox::topology::topic_matches;

TEST_CASE("topic wildcards: star is exactly one word, hash is zero or more", "[topology][topic]") {
    CHECK(topic_matches("orders.#", "orders"));
    CHECK(topic_matches("orders.#", "orders.created"));
    CHECK(topic_matches("orders.#", "orders.a.b"));
    CHECK_FALSE(topic_matches("orders.*", "orders"));
    CHECK_FALSE(topic_matches("orders.*", "orders.a.b"));
    CHECK(topic_matches("orders.*", "orders.a"));
    CHECK(topic_matches("#", ""));
    CHECK(topic_matches("", ""));
    CHECK_FALSE(topic_matches("*", ""));
    CHECK_FALSE(topic_matches("*.#", ""));
    CHECK(topic_matches("a.#.b", "a.b"));
    CHECK(topic_matches("#.#", ""));
}

TEST_CASE("topic wildcards inside a word are literal and empty words count", "[topology][topic]") {
    CHECK_FALSE(topic_matches("simply#carrots", "simplycarrots"));
    CHECK(topic_matches("simply#carrots", "simply#carrots"));
    CHECK_FALSE(topic_matches("this.*.rules", "*.queue.rules"));
    CHECK(topic_matches("a..b", "a..b"));
    CHECK(topic_matches("a.*.b", "a..b"));
    CHECK(topic_matches(".*.a.b.c", ".0.a.b.c"));
    CHECK_FALSE(topic_matches(".*", ".0.a.b.c"));
}

TEST_CASE("topic_hash_words counts only whole-word hashes", "[topology][topic]") {
    CHECK(topic_hash_words("#.#.#") == 3);
    CHECK(topic_hash_words("##.a#b.#a") == 0);
    CHECK(topic_hash_words("") == 0);
}

} // namespace unit_topology_topic_match
