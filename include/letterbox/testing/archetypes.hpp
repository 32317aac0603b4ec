// SPDX-License-Identifier: BSL-1.0
#pragma once

/// Every archetype: the minimal model of each letterbox concept. Third-party generic
/// components can instantiate themselves over these to prove they use only what the concepts
/// promise (see tests/archetypes/).
#include <letterbox/testing/archetypes/checkpoint_store.hpp>
#include <letterbox/testing/archetypes/clock.hpp>
#include <letterbox/testing/archetypes/event_store.hpp>
#include <letterbox/testing/archetypes/handler.hpp>
#include <letterbox/testing/archetypes/inbox_store.hpp>
#include <letterbox/testing/archetypes/outbox_store.hpp>
#include <letterbox/testing/archetypes/retry_policy.hpp>
#include <letterbox/testing/archetypes/saga_store.hpp>
#include <letterbox/testing/archetypes/snapshot_store.hpp>
#include <letterbox/testing/archetypes/transport.hpp>
#include <letterbox/testing/archetypes/unit_of_work.hpp>
