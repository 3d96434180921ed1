//! Operational metrics, exposed at `GET /prometheus` in the OpenMetrics text
//! format (which Prometheus scrapes natively).
//!
//! Requests, cache and search metrics live in a `prometheus-client` registry
//! owned by the server; probe counts live in [`Tablebases`] (lock-free, see
//! [`crate::probe_counts`]) and, like table sizes, are read only when scraped.

use std::{
    fmt,
    hash::BuildHasher as _,
    sync::{Arc, RwLock},
    time::Duration,
};

use rustc_hash::{FxBuildHasher, FxHashMap};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric, NoLabelSet},
    metrics::{
        MetricType,
        counter::Counter,
        family::Family,
        gauge::{ConstGauge, Gauge},
        histogram::Histogram,
    },
    registry::{Registry, Unit},
};

use crate::{domain::Source, tablebase::Tablebases};

/// Seconds, from 50 µs (a cached answer) to 20 s (the longest search).
const SECONDS_BUCKETS: [f64; 16] =
    [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 20.0];

fn seconds_histogram() -> Histogram {
    Histogram::new(SECONDS_BUCKETS)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RequestLabels {
    /// The matched route template (`/api/v1/probe`), never the raw URI, so
    /// that the number of series stays bounded.
    pub route: String,
    pub method: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RouteLabels {
    pub route: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ReasonLabels {
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CostLabels {
    /// What kind of work: `probe`, `line`, `batch`, `analysis`, `other`.
    pub class: &'static str,
    /// `served` or `limited` (429).
    pub outcome: &'static str,
}

#[derive(Clone, Default)]
pub(crate) struct ConnectionMetrics {
    pub open: Gauge,
    closed: Family<ReasonLabels, Counter>,
}

impl ConnectionMetrics {
    pub fn closed(&self, why: ConnectionClosed) {
        let reason = match why {
            ConnectionClosed::HeadTimeout => "head_timeout",
            ConnectionClosed::IdleTimeout => "idle_timeout",
            ConnectionClosed::SendStalled => "send_stalled",
            ConnectionClosed::Evicted => "evicted",
        };
        self.closed.get_or_create(&ReasonLabels { reason }).inc();
    }
}

/// Why tbserver closed a connection itself.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ConnectionClosed {
    /// The request head did not arrive whole within `limits.head_timeout_ms`.
    HeadTimeout,
    /// Nothing came after an answer for `limits.idle_timeout_ms`.
    IdleTimeout,
    /// The client took no byte of an answer for `limits.idle_timeout_ms`.
    SendStalled,
    /// Closed to make room at `limits.max_connections`.
    Evicted,
}

/// Everything `/prometheus` reports.
pub struct Telemetry {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_seconds: HistogramFamily<RouteLabels>,
    cache_hits: Counter,
    cache_misses: Counter,
    probes_waiting: Gauge,
    searches_running: Gauge,
    searches_refused: Counter,
    search_seconds: Histogram,
    connections_open: Gauge,
    connections_closed: Family<ReasonLabels, Counter>,
    cost_requests: Family<CostLabels, Counter>,
    cost_units: Family<CostLabels, Counter>,
    /// The series of `requests` and `request_seconds` already met, by a hash
    /// of (route, method, status): recording a request then builds no label
    /// strings, which would weigh on a cached answer's small cost.
    request_series: RwLock<FxHashMap<u64, Vec<RequestSeries>>>,
}

struct RequestSeries {
    labels: RequestLabels,
    count: Counter,
    seconds: Histogram,
}

impl Telemetry {
    /// `tablebases` is the server's current index, which a rescan replaces.
    pub fn new(tablebases: CurrentTables) -> Telemetry {
        let mut t = Telemetry {
            registry: Registry::with_prefix("tbserver"),
            requests: Family::default(),
            request_seconds: Family::new_with_constructor(seconds_histogram),
            cache_hits: Counter::default(),
            cache_misses: Counter::default(),
            probes_waiting: Gauge::default(),
            searches_running: Gauge::default(),
            searches_refused: Counter::default(),
            search_seconds: seconds_histogram(),
            connections_open: Gauge::default(),
            connections_closed: Family::default(),
            cost_requests: Family::default(),
            cost_units: Family::default(),
            request_series: RwLock::default(),
        };
        let r = &mut t.registry;
        r.register("http_requests", "HTTP requests answered, by route template, method and status", t.requests.clone());
        r.register_with_unit(
            "http_request_duration",
            "Time to the response head, by route template (a stream's body may take longer)",
            Unit::Seconds,
            t.request_seconds.clone(),
        );
        r.register("cache_hits", "Answers served from the response cache", t.cache_hits.clone());
        r.register("cache_misses", "Cacheable answers that had to be computed", t.cache_misses.clone());
        r.register(
            "probe_requests_waiting",
            "Requests waiting for a probe slot (limits.max_concurrent_probes)",
            t.probes_waiting.clone(),
        );
        r.register("searches_running", "Searches (/api/v1/analyse) running now", t.searches_running.clone());
        r.register(
            "searches_refused",
            "Searches refused with 503 because all search slots were busy",
            t.searches_refused.clone(),
        );
        r.register_with_unit(
            "search_duration",
            "Wall time of finished searches",
            Unit::Seconds,
            t.search_seconds.clone(),
        );
        r.register("connections_open", "HTTP connections open now", t.connections_open.clone());
        r.register(
            "connections_closed",
            "Connections tbserver closed itself, by reason: head_timeout, idle_timeout, evicted (at limits.max_connections)",
            t.connections_closed.clone(),
        );
        r.register(
            "client_budget_requests",
            "Requests charged to a client's budget (limits.client_budget_per_second), by cost class and outcome (served, limited)",
            t.cost_requests.clone(),
        );
        r.register(
            "client_budget_units",
            "Budget units charged (or asked for, when limited), by cost class and outcome",
            t.cost_units.clone(),
        );
        r.register_collector(Box::new(TablesCollector(tablebases)));
        r.register_collector(Box::new(HeapCollector));
        t
    }

    pub(crate) fn record_request(&self, route: &str, method: &str, status: u16, elapsed: Duration) {
        let key = FxBuildHasher.hash_one((route, method, status));
        let is = |s: &&RequestSeries| s.labels.status == status && s.labels.route == route && s.labels.method == method;
        let series = self.request_series.read().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = series.get(&key).and_then(|list| list.iter().find(is)) {
            s.count.inc();
            s.seconds.observe(elapsed.as_secs_f64());
            return;
        }
        drop(series);
        let labels = RequestLabels { route: route.to_owned(), method: method.to_owned(), status };
        let count = self.requests.get_or_create(&labels).clone();
        let seconds = self.request_seconds.get_or_create(&RouteLabels { route: labels.route.clone() }).clone();
        count.inc();
        seconds.observe(elapsed.as_secs_f64());
        let mut series = self.request_series.write().unwrap_or_else(|e| e.into_inner());
        let list = series.entry(key).or_default();
        if !list.iter().any(|s| is(&s)) {
            list.push(RequestSeries { labels, count, seconds });
        }
    }

    pub(crate) fn record_cache(&self, hit: bool) {
        if hit { &self.cache_hits } else { &self.cache_misses }.inc();
    }

    /// Counts a request waiting for a probe slot until the guard is dropped.
    pub(crate) fn probe_waiting(&self) -> GaugeGuard<'_> {
        self.probes_waiting.inc();
        GaugeGuard { gauge: &self.probes_waiting }
    }

    /// The open connections gauge and the closed connections counters,
    /// kept by the listener.
    pub(crate) fn connection_metrics(&self) -> ConnectionMetrics {
        ConnectionMetrics { open: self.connections_open.clone(), closed: self.connections_closed.clone() }
    }

    /// A request charged `units` to its client's budget (`limited`: refused).
    pub(crate) fn record_cost(&self, class: &'static str, limited: bool, units: u64) {
        let labels = CostLabels { class, outcome: if limited { "limited" } else { "served" } };
        self.cost_requests.get_or_create(&labels).inc();
        self.cost_units.get_or_create(&labels).inc_by(units);
    }

    pub(crate) fn search_refused(&self) {
        self.searches_refused.inc();
    }

    /// Counts a running search until the returned guard is dropped, then
    /// records its duration.
    pub(crate) fn search_started(&self) -> SearchGuard {
        self.searches_running.inc();
        SearchGuard {
            running: self.searches_running.clone(),
            seconds: self.search_seconds.clone(),
            started: std::time::Instant::now(),
        }
    }

    /// The OpenMetrics text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

pub(crate) struct GaugeGuard<'a> {
    gauge: &'a Gauge,
}

impl Drop for GaugeGuard<'_> {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

pub(crate) struct SearchGuard {
    running: Gauge,
    seconds: Histogram,
    started: std::time::Instant,
}

impl Drop for SearchGuard {
    fn drop(&mut self) {
        self.running.dec();
        self.seconds.observe(self.started.elapsed().as_secs_f64());
    }
}

/// What the memory allocator holds, in bytes, as the program that chose
/// the allocator reads it (see [`set_heap_reader`]).
#[derive(Clone, Copy, Debug)]
pub struct HeapStats {
    /// Bytes in live allocations.
    pub allocated_bytes: u64,
    /// Bytes of the allocator's pages resident in memory: live allocations,
    /// the allocator's own metadata, and freed pages not yet given back to
    /// the kernel.
    pub resident_bytes: u64,
}

static HEAP_READER: std::sync::OnceLock<fn() -> Option<HeapStats>> = std::sync::OnceLock::new();

/// Makes `/prometheus` report `tbserver_heap_allocated_bytes` and
/// `tbserver_heap_resident_bytes` from `reader` (called at each scrape).
/// Set once, by the binary that picked the global allocator; later calls
/// are ignored.
pub fn set_heap_reader(reader: fn() -> Option<HeapStats>) {
    let _ = HEAP_READER.set(reader);
}

#[derive(Debug)]
struct HeapCollector;

impl Collector for HeapCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let Some(stats) = HEAP_READER.get().and_then(|read| read()) else {
            return Ok(());
        };
        for (name, help, bytes) in [
            ("heap_allocated", "Bytes the allocator holds in live allocations", stats.allocated_bytes),
            (
                "heap_resident",
                "Bytes of the allocator's pages in memory: live allocations, its metadata and freed pages not yet returned to the kernel",
                stats.resident_bytes,
            ),
        ] {
            ConstGauge::new(i64::try_from(bytes).unwrap_or(i64::MAX)).encode(encoder.encode_descriptor(
                name,
                help,
                Some(&Unit::Bytes),
                MetricType::Gauge,
            )?)?;
        }
        Ok(())
    }
}

/// Probe counts and table sizes, read from the tables at scrape time.
/// The index in use, swapped whole by a rescan (probe counts then start
/// again from zero, which Prometheus reads as a counter reset).
pub(crate) type CurrentTables = Arc<std::sync::RwLock<Arc<Tablebases>>>;

struct TablesCollector(CurrentTables);

impl TablesCollector {
    fn current(&self) -> Arc<Tablebases> {
        Arc::clone(&self.0.read().unwrap_or_else(|e| e.into_inner()))
    }
}

impl fmt::Debug for TablesCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TablesCollector")
    }
}

impl Collector for TablesCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let tablebases = self.current();
        let mut probes = encoder.encode_descriptor(
            "table_probes",
            "Table probes answered, by source, table (normalized material) and metric",
            None,
            MetricType::Counter,
        )?;
        for c in tablebases.probes.snapshot() {
            let labels = [("source", c.source.as_str()), ("table", c.table.as_str()), ("metric", c.metric.as_str())];
            probes.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(&c.count, None)?;
        }

        let tables = tablebases.tables();
        let sources: Vec<Source> = tablebases.sources().collect();
        let per_source = |f: &dyn Fn(&crate::sources::TableInfo) -> i64| -> Vec<(Source, i64)> {
            sources.iter().map(|&s| (s, tables.iter().filter(|t| t.source == s).map(f).sum())).collect()
        };
        let mut count = encoder.encode_descriptor("tables", "Tables indexed, by source", None, MetricType::Gauge)?;
        for (source, n) in per_source(&|_| 1) {
            ConstGauge::new(n).encode(count.encode_family(&[("source", source.as_str())])?)?;
        }
        let mut bytes = encoder.encode_descriptor(
            "table_size",
            "Size of the table files by source; Syzygy and built-in tables are memory-mapped, so this is what the page cache can hold of them",
            Some(&Unit::Bytes),
            MetricType::Gauge,
        )?;
        for (source, n) in per_source(&|t| i64::try_from(t.bytes).unwrap_or(i64::MAX)) {
            ConstGauge::new(n).encode(bytes.encode_family(&[("source", source.as_str())])?)?;
        }

        let mut faults = encoder.encode_descriptor(
            "mapped_faults",
            "Reads of memory-mapped table files that met a lost page (a file truncated in place, a disk read error), contained: the probes that met them failed, the process went on",
            None,
            MetricType::Counter,
        )?;
        faults.encode_counter::<NoLabelSet, _, u64>(&mapguard::faults(), None)?;
        let mapped = encoder.encode_descriptor(
            "mapped_files",
            "Table files memory-mapped now under the guard that contains lost pages",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(i64::try_from(mapguard::registered()).unwrap_or(i64::MAX)).encode(mapped)?;

        let caches: Vec<(Source, crate::sources::BlockCacheCounts)> =
            tablebases.source_handles().filter_map(|s| s.block_cache().map(|c| (s.source(), c))).collect();
        type Counter = (&'static str, &'static str, fn(&crate::sources::BlockCacheCounts) -> u64);
        let counters: [Counter; 5] = [
            ("block_cache_hits", "Table blocks found decoded in the source's block cache", |c| c.hits),
            ("block_cache_misses", "Table blocks that had to be decoded", |c| c.misses),
            ("block_cache_evictions", "Decoded blocks dropped to keep the block cache within its size", |c| {
                c.evictions
            }),
            ("rebuilt_cache_hits", "Answers for a side to move the files leave out, found already rebuilt", |c| {
                c.rebuilt_hits
            }),
            (
                "rebuilt_cache_misses",
                "Answers for a side to move the files leave out, rebuilt by a one-ply search",
                |c| c.rebuilt_misses,
            ),
        ];
        for (name, help, get) in counters {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (source, c) in &caches {
                family
                    .encode_family(&[("source", source.as_str())])?
                    .encode_counter::<NoLabelSet, _, u64>(&get(c), None)?;
            }
        }
        let mut size = encoder.encode_descriptor(
            "block_cache_size",
            "Decoded blocks held, by source",
            Some(&Unit::Bytes),
            MetricType::Gauge,
        )?;
        for (source, c) in &caches {
            ConstGauge::new(i64::try_from(c.bytes).unwrap_or(i64::MAX))
                .encode(size.encode_family(&[("source", source.as_str())])?)?;
        }

        if let Some(g) = tablebases.generation_counters() {
            let mut refused = encoder.encode_descriptor(
                "generations_refused",
                "Generations of built-in tables refused before they started, by what was short (memory, disk, queue)",
                None,
                MetricType::Counter,
            )?;
            for (reason, n) in [("memory", g.refused_memory), ("disk", g.refused_disk), ("queue", g.refused_queue)] {
                refused.encode_family(&[("reason", reason)])?.encode_counter::<NoLabelSet, _, u64>(&n, None)?;
            }
            encoder
                .encode_descriptor(
                    "builtin_write_failures",
                    "Built-in tables generated but not written (a full disk, a read-only directory)",
                    None,
                    MetricType::Counter,
                )?
                .encode_counter::<NoLabelSet, _, u64>(&g.write_failures, None)?;
            ConstGauge::new(i64::try_from(g.unwritten_bytes).unwrap_or(i64::MAX)).encode(
                encoder.encode_descriptor(
                    "builtin_unwritten_size",
                    "Built-in tables served from memory because they could not be written",
                    Some(&Unit::Bytes),
                    MetricType::Gauge,
                )?,
            )?;
            ConstGauge::new(i64::try_from(g.failed_tables).unwrap_or(i64::MAX)).encode(encoder.encode_descriptor(
                "builtin_failed_tables",
                "Built-in tables whose last attempt failed (retried when next asked for)",
                None,
                MetricType::Gauge,
            )?)?;
        }
        Ok(())
    }
}
