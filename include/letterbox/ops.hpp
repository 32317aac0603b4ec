// SPDX-License-Identifier: BSL-1.0
#pragma once

/// letterbox::ops: what operators need to watch and repair a running application. Metrics in the
/// Prometheus text format (`metrics_registry`, `letterbox_metrics`) and an HTTP endpoint on
/// Boost.Beast (`http_server`): health, metrics, the dead-letter and outbox APIs and a
/// dashboard. See docs/operations.md.

#include <letterbox/ops/connection_check.hpp>
#include <letterbox/ops/counter.hpp>
#include <letterbox/ops/gauge.hpp>
#include <letterbox/ops/histogram.hpp>
#include <letterbox/ops/http_server.hpp>
#include <letterbox/ops/http_server_options.hpp>
#include <letterbox/ops/letterbox_metrics.hpp>
#include <letterbox/ops/metric_labels.hpp>
#include <letterbox/ops/metrics_registry.hpp>
#include <letterbox/ops/readiness.hpp>
#include <letterbox/ops/relay_lag_check.hpp>
#include <letterbox/ops/topology_lint_check.hpp>
