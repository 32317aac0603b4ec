// SPDX-License-Identifier: BSL-1.0
// Compile-only: the transport, handler, retry_policy and clock archetypes model their concepts,
// and every generic component over them compiles with them, so it uses nothing the concepts do
// not promise. Today those components are the transport conformance suite (its helpers and
// checks), the in-memory broker's clock adapter, the middleware layers, the consumer, and the
// dead-letter operations.

#include <letterbox/consumer.hpp>
#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/dlq/depth_gauge.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/redelivery.hpp>
#include <letterbox/middleware/retry.hpp>
#include <letterbox/testing/archetypes/clock.hpp>
#include <letterbox/testing/archetypes/handler.hpp>
#include <letterbox/testing/archetypes/retry_policy.hpp>
#include <letterbox/testing/archetypes/transport.hpp>
#include <letterbox/testing/transport_suite.hpp>
#include <letterbox/transport/in_memory/detail/clock_adapter.hpp>

#include <boost/asio/deferred.hpp>
#include <boost/asio/use_future.hpp>

#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace lt = letterbox::testing;
using archetype = lt::transport_archetype;
using harness = lt::transport_harness<archetype>;

static_assert(letterbox::transport<archetype>);
static_assert(letterbox::queue_reader<lt::queue_reader_archetype>);
static_assert(!letterbox::queue_reader<archetype>);
static_assert(letterbox::handler<lt::handler_archetype>);
static_assert(letterbox::retry_policy<lt::retry_policy_archetype>);
static_assert(letterbox::waitable_timer<lt::waitable_timer_archetype>);
static_assert(letterbox::clock<lt::clock_archetype>);

// The archetypes are as poor as the concepts allow.
static_assert(!std::is_copy_constructible_v<archetype>);
static_assert(!std::is_default_constructible_v<archetype>);
static_assert(!std::is_copy_constructible_v<lt::handler_archetype>);
static_assert(!std::is_move_constructible_v<lt::clock_archetype>);

// The transport archetype's operations accept any completion token: a plain callback, a future
// and a deferred operation.
static_assert(std::is_void_v<decltype(std::declval<archetype&>().async_publish(
                  std::declval<const letterbox::message&>(), [](std::error_code) {}))>);
static_assert(
    std::is_same_v<decltype(std::declval<archetype&>().async_publish(
                       std::declval<const letterbox::message&>(), boost::asio::use_future)),
                   std::future<void>>);
static_assert(
    !std::is_void_v<decltype(std::declval<archetype&>().async_close(boost::asio::deferred))>);
static_assert(std::is_void_v<decltype(std::declval<lt::waitable_timer_archetype&>().async_wait(
                  [](boost::system::error_code) {}))>);

// The suite's reusable pieces.
template struct lt::transport_harness<archetype>;
// clang-format off
template std::error_code lt::declare<archetype>(harness&, archetype&, const letterbox::topology::queue&);
template std::error_code lt::declare<archetype>(harness&, archetype&, const letterbox::topology::exchange&);
template std::error_code lt::bind<archetype>(harness&, archetype&, const letterbox::topology::binding&);
template std::string lt::declare_fresh_queue<archetype>(harness&, archetype&, std::string_view);
template std::error_code lt::publish<archetype>(harness&, archetype&, const letterbox::message&);
template std::vector<std::error_code> lt::publish_all<archetype>(harness&, archetype&, const std::vector<letterbox::message>&);
template void lt::require_published<archetype>(harness&, archetype&, const std::vector<letterbox::message>&);
template std::error_code lt::close<archetype>(harness&, archetype&);
template std::error_code lt::cancel<archetype>(harness&, archetype&, const std::string&);
template std::error_code lt::ack<archetype>(harness&, archetype&, const letterbox::delivery&);
template std::error_code lt::nack<archetype>(harness&, archetype&, const letterbox::delivery&, bool);
template void lt::settle<archetype>(archetype&, const std::shared_ptr<lt::consumer_log>&, const letterbox::delivery&, lt::settle_action);
template std::shared_ptr<lt::consumer_log> lt::begin_consume<archetype>(archetype&, const letterbox::consume_options&, lt::settle_policy);
template std::shared_ptr<lt::consumer_log> lt::consume<archetype>(harness&, archetype&, const letterbox::consume_options&, lt::settle_policy);
template bool lt::collect_unique<archetype>(harness&, const std::vector<std::shared_ptr<lt::consumer_log>>&, std::size_t);
template bool lt::collect_acked<archetype>(harness&, const std::vector<std::shared_ptr<lt::consumer_log>>&, std::size_t);

// The suite's checks.
template void lt::detail::transport_check_round_trip<archetype>(harness&);
template void lt::detail::transport_check_publish_subscribe<archetype>(harness&);
template void lt::detail::transport_check_concurrent_publishers_competing_consumers<archetype>(harness&);
template void lt::detail::transport_check_many_queues_at_once<archetype>(harness&);
template void lt::detail::transport_check_publish_subscribe_in_order<archetype>(harness&);
template void lt::detail::transport_check_resend_on_nack<archetype>(harness&);
template void lt::detail::transport_check_redelivery_is_flagged<archetype>(harness&);
template void lt::detail::transport_check_ack_and_nack_settle<archetype>(harness&);
template void lt::detail::transport_check_held_delivery_blocks_the_next<archetype>(harness&);
template void lt::detail::transport_check_no_loss_when_consumers_stop<archetype>(harness&);
template void lt::detail::transport_check_concurrent_close<archetype>(harness&);
template void lt::detail::transport_check_continue_after_nacks<archetype>(harness&);
template void lt::detail::transport_check_consumer_groups<archetype>(harness&);
template void lt::detail::transport_check_publisher_close_after_concurrent_publishes<archetype>(harness&);
template void lt::detail::transport_check_routing_isolates_queues<archetype>(harness&);
template void lt::detail::transport_check_settling_after_close_fails<archetype>(harness&);
template void lt::detail::transport_check_cancel_right_after_consume<archetype>(harness&);
template void lt::detail::transport_check_publish_through_broker_restarts<archetype>(harness&);
template void lt::detail::transport_check_close_is_idempotent<archetype>(harness&);
template void lt::detail::transport_check_close_completes_pending_publishes<archetype>(harness&);
template void lt::detail::transport_check_close_requeues_unacked<archetype>(harness&);
template void lt::detail::transport_check_cancel_keeps_deliveries_settleable<archetype>(harness&);
template void lt::detail::transport_check_unroutable_publish_is_no_route<archetype>(harness&);
template void lt::detail::transport_check_publish_to_missing_exchange_is_not_found<archetype>(harness&);
template void lt::detail::transport_check_consume_from_missing_queue_is_not_found<archetype>(harness&);
template void lt::detail::transport_check_redeclaring_is_idempotent<archetype>(harness&);
template void lt::detail::transport_check_deliveries_follow_consume_completion<archetype>(harness&);
template void lt::detail::transport_check_requeue_loop_does_not_starve_others<archetype>(harness&);

// The optional queue_reader refinement: its helpers and checks, with its archetype.
using reader = lt::queue_reader_archetype;
using reader_harness = lt::transport_harness<reader>;
template struct lt::transport_harness<reader>;
template lt::get_result lt::get<reader>(reader_harness&, reader&, const std::string&);
template lt::depth_result lt::queue_depth<reader>(reader_harness&, reader&, const std::string&);
template void lt::detail::transport_check_get_fetches_in_order_until_empty<reader>(reader_harness&);
template void lt::detail::transport_check_get_then_nack_requeues<reader>(reader_harness&);
template void lt::detail::transport_check_unsettled_gets_return_on_close<reader>(reader_harness&);
template void lt::detail::transport_check_depth_and_missing_queues<reader>(reader_harness&);

// Middleware over the policy, clock and handler archetypes; the consumer over the transport's.
template class letterbox::middleware::retry_handler<lt::retry_policy_archetype, lt::handler_archetype>;
template class letterbox::middleware::redelivery_handler<lt::retry_policy_archetype, lt::clock_archetype, lt::handler_archetype>;
template class letterbox::middleware::dead_letter_handler<lt::clock_archetype, lt::handler_archetype>;
template class letterbox::consumer<archetype, lt::handler_archetype, lt::clock_archetype>;

// Dead-letter operations over the queue_reader archetype.
template class letterbox::dlq::dead_letter_queue<reader>;
template class letterbox::dlq::depth_gauge<reader, lt::clock_archetype>;
// clang-format on

// The in-memory broker reads any clock through this adapter.
template class letterbox::in_memory::detail::clock_model<lt::clock_archetype>;
