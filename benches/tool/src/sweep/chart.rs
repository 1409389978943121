//! The sweep's SVG chart ([`svg`]): modeled latency (left panel) and SQ
//! ring bytes (right panel) against max_send_sge at one max_send_wr, with
//! the published figures, the command-path measurements and the rejected
//! points. Hand-written SVG, built step by step: the title, per panel
//! its data, scale, axes, series, measured line, reference line and
//! rejection marks, then the legend.

use super::{find, Sweep, BLOG_LATENCY_US};
use std::fmt::Write as _;

/// The plotted series: (legend name, posted SGEs (0 = k = max_send_sge),
/// send-op set, colour).
const SERIES: [(&str, u32, &str, &str); 4] = [
    ("classic, 1 SGE posted", 1, "classic", "#1f77b4"),
    ("classic, k = max_send_sge posted", 0, "classic", "#d62728"),
    ("rdma-only ops, 1 SGE posted", 1, "rdma", "#2ca02c"),
    ("rdma-only ops, k posted", 0, "rdma", "#ff7f0e"),
];

/// An SVG chart: modeled latency (left) and SQ ring bytes (right) against
/// max_send_sge at max_send_wr = `wr`.
pub fn svg(s: &Sweep, wr: u32, sges: &[u32]) -> String {
    let (w, h) = (1100.0f64, 580.0f64);
    let mut o = String::new();
    title(&mut o, s, wr, w, h);
    let max_sge = *sges.iter().max().unwrap_or(&32) as f64;
    // Panel geometry.
    let panels = [
        (70.0, "Modeled one-way latency [ns]"),
        (620.0, "SQ ring bytes per QP [KiB]"),
    ];
    let (pw, ph, top) = (420.0, 340.0, 80.0);
    for (pi, (x0, ylabel)) in panels.iter().enumerate() {
        let data = panel_data(s, wr, sges, pi);
        let (ymin, ymax, step) = y_range(&data, pi);
        let sc = Scale {
            x0: *x0,
            pw,
            ph,
            top,
            max_sge,
            ymin,
            ymax,
        };
        axes(&mut o, &sc, step, sges, ylabel);
        series_lines(&mut o, &sc, &data.pts);
        measured_line(&mut o, &sc, &data.meas);
        reference_line(&mut o, &sc, &data.extra);
        rejected_marks(&mut o, &sc, s, wr, sges);
    }
    legend(&mut o, s, w, top + ph + 62.0);
    let _ = writeln!(o, "</svg>");
    o
}

/// The opening tag, the background and the two title lines.
fn title(o: &mut String, s: &Sweep, wr: u32, w: f64, h: f64) {
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="Helvetica, Arial, sans-serif">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{}" y="28" font-size="18" text-anchor="middle" font-weight="bold">RC RDMA WRITE: modeled latency and SQ ring size vs max_send_sge (max_send_wr {wr})</text>"#,
        w / 2.0
    );
    let _ = writeln!(
        o,
        r##"<text x="{}" y="48" font-size="12" text-anchor="middle" fill="#555">latency: NIC model {}, non-inline, 1 WR/doorbell; ring: exact rdma-core sizing; device max_sq_desc_sz {} B</text>"##,
        w / 2.0,
        xml(&s.model_name),
        s.caps.max_sq_desc_sz
    );
}

/// What one panel plots.
struct PanelData {
    /// Per series (index into [`SERIES`]): its (max_send_sge, value) points.
    pts: Vec<(usize, Vec<(f64, f64)>)>,
    /// The published reference points (blog latency or blog estimate).
    extra: Vec<(f64, f64)>,
    /// Measured (command path) latency, classic ops, k posted SGEs (left
    /// panel only).
    meas: Vec<(f64, f64)>,
}

/// The values of panel `pi` (0: modeled latency, 1: ring KiB).
fn panel_data(s: &Sweep, wr: u32, sges: &[u32], pi: usize) -> PanelData {
    // Collect values.
    let mut pts: Vec<(usize, Vec<(f64, f64)>)> = Vec::new();
    for (si, (_, posted, ops, _)) in SERIES.iter().enumerate() {
        let mut v = Vec::new();
        for &sge in sges {
            let p = if *posted == 0 { sge } else { 1 };
            if pi == 1 && *posted == 0 {
                continue; // ring does not depend on posted SGEs
            }
            if let Some(r) = find(s, wr, sge, p, ops, false) {
                let y = if pi == 0 {
                    r.modeled_latency_ns
                } else {
                    r.ring_bytes.map(|b| b as f64 / 1024.0)
                };
                if let Some(y) = y {
                    v.push((sge as f64, y));
                }
            }
        }
        pts.push((si, v));
    }
    let mut extra: Vec<(f64, f64)> = Vec::new();
    if pi == 0 {
        // Blog points, shifted to the model's 1-SGE level so shapes compare.
        let base = find(s, wr, 1, 1, "classic", false).and_then(|r| r.modeled_latency_ns);
        if let Some(b) = base {
            extra = BLOG_LATENCY_US
                .iter()
                .map(|&(k, us)| (k as f64, b + (us - 2.01) * 1000.0))
                .collect();
        }
    } else {
        extra = sges
            .iter()
            .map(|&k| (k as f64, wr as f64 * (64.0 + 16.0 * k as f64) / 1024.0))
            .collect();
    }
    // Measured (command path) latency, classic ops, k posted SGEs.
    let meas: Vec<(f64, f64)> = if pi == 0 {
        sges.iter()
            .filter_map(|&k| {
                let r = find(s, wr, k, k, "classic", false)?;
                Some((k as f64, r.measured_latency_ns?))
            })
            .collect()
    } else {
        Vec::new()
    };
    PanelData { pts, extra, meas }
}

/// The y axis of panel `pi`: (ymin, ymax, tick step) over every value it
/// plots (the ring panel starts at 0).
fn y_range(d: &PanelData, pi: usize) -> (f64, f64, f64) {
    let all_y: Vec<f64> = d
        .pts
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.1))
        .chain(d.extra.iter().map(|p| p.1))
        .chain(d.meas.iter().map(|p| p.1))
        .collect();
    let ymax_raw = all_y.iter().cloned().fold(1.0, f64::max);
    let ymin_raw = if pi == 0 {
        all_y.iter().cloned().fold(f64::INFINITY, f64::min)
    } else {
        0.0
    };
    let step = nice_step((ymax_raw - ymin_raw.min(ymax_raw)) / 6.0);
    let ymin = if pi == 0 {
        (ymin_raw / step).floor() * step
    } else {
        0.0
    };
    let ymax = (ymax_raw / step).ceil() * step;
    (ymin, ymax, step)
}

/// A panel's placement and value range: data → SVG coordinates.
struct Scale {
    /// Left edge.
    x0: f64,
    /// Width.
    pw: f64,
    /// Height.
    ph: f64,
    /// Top edge.
    top: f64,
    /// The largest max_send_sge (the right edge).
    max_sge: f64,
    /// The value at the bottom edge.
    ymin: f64,
    /// The value at the top edge.
    ymax: f64,
}

impl Scale {
    /// The x coordinate of max_send_sge `x`.
    fn x(&self, x: f64) -> f64 {
        self.x0 + self.pw * x / self.max_sge
    }

    /// The y coordinate of value `y`.
    fn y(&self, y: f64) -> f64 {
        self.top + self.ph - self.ph * (y - self.ymin) / (self.ymax - self.ymin).max(1e-9)
    }

    /// `points` as a polyline's point list.
    fn path(&self, points: &[(f64, f64)]) -> String {
        let path: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", self.x(x), self.y(y)))
            .collect();
        path.join(" ")
    }
}

/// The panel's frame, the horizontal grid every `step` with its labels,
/// the vertical grid at each max_send_sge and the two axis titles.
fn axes(o: &mut String, sc: &Scale, step: f64, sges: &[u32], ylabel: &str) {
    let (x0, pw, ph, top) = (sc.x0, sc.pw, sc.ph, sc.top);
    // Axes and grid.
    let _ = writeln!(
        o,
        r##"<rect x="{x0}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
    );
    let mut y = sc.ymin;
    while y <= sc.ymax + 1e-9 {
        let py = sc.y(y);
        let _ = writeln!(
            o,
            r##"<line x1="{x0}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"##,
            x0 + pw,
            x0 - 6.0,
            py + 4.0,
            fmt_tick(y)
        );
        y += step;
    }
    for &k in sges {
        let px = sc.x(k as f64);
        let _ = writeln!(
            o,
            r##"<line x1="{px:.1}" y1="{top}" x2="{px:.1}" y2="{:.1}" stroke="#eee"/><text x="{px:.1}" y="{:.1}" font-size="12" text-anchor="middle">{k}</text>"##,
            top + ph,
            top + ph + 18.0
        );
    }
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" font-size="14" text-anchor="middle">max_send_sge</text>"#,
        x0 + pw / 2.0,
        top + ph + 38.0
    );
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" font-size="14" text-anchor="middle" transform="rotate(-90 {:.1} {:.1})">{ylabel}</text>"#,
        x0 - 52.0,
        top + ph / 2.0,
        x0 - 52.0,
        top + ph / 2.0
    );
}

/// Each series as a line (dashed for rdma-only ops) with its points.
fn series_lines(o: &mut String, sc: &Scale, pts: &[(usize, Vec<(f64, f64)>)]) {
    // Series.
    for (si, v) in pts {
        let color = SERIES[*si].3;
        if v.is_empty() {
            continue;
        }
        let dash = if SERIES[*si].2 == "rdma" {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            o,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2.5"{dash}/>"#,
            sc.path(v)
        );
        for &(x, y) in v {
            let _ = writeln!(
                o,
                r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{color}"/>"#,
                sc.x(x),
                sc.y(y)
            );
        }
    }
}

/// The measured latency line with open circles (when there is one).
fn measured_line(o: &mut String, sc: &Scale, meas: &[(f64, f64)]) {
    if !meas.is_empty() {
        let _ = writeln!(
            o,
            r##"<polyline points="{}" fill="none" stroke="#9467bd" stroke-width="2"/>"##,
            sc.path(meas)
        );
        for &(x, y) in meas {
            let _ = writeln!(
                o,
                r##"<circle cx="{:.1}" cy="{:.1}" r="5" fill="white" stroke="#9467bd" stroke-width="2"/>"##,
                sc.x(x),
                sc.y(y)
            );
        }
    }
}

/// The published reference series: black squares, dotted.
fn reference_line(o: &mut String, sc: &Scale, extra: &[(f64, f64)]) {
    // Reference (blog) series: black squares, dotted.
    let _ = writeln!(
        o,
        r#"<polyline points="{}" fill="none" stroke="black" stroke-width="1.5" stroke-dasharray="2 3"/>"#,
        sc.path(extra)
    );
    for &(x, y) in extra {
        let _ = writeln!(
            o,
            r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="black"/>"#,
            sc.x(x) - 4.0,
            sc.y(y) - 4.0
        );
    }
}

/// A ✕ at the bottom of the panel for each max_send_sge whose QP the
/// sizing rejects (blue: classic ops, green, above it: rdma-only).
fn rejected_marks(o: &mut String, sc: &Scale, s: &Sweep, wr: u32, sges: &[u32]) {
    // Rejected markers.
    for &k in sges {
        for ops in ["classic", "rdma"] {
            if let Some(r) = find(s, wr, k, 1, ops, false) {
                if r.error.is_some() {
                    let c = if ops == "classic" {
                        "#1f77b4"
                    } else {
                        "#2ca02c"
                    };
                    let (px, py) = (
                        sc.x(k as f64),
                        sc.top + sc.ph - 10.0 - if ops == "rdma" { 14.0 } else { 0.0 },
                    );
                    let _ = writeln!(
                        o,
                        r#"<text x="{px:.1}" y="{py:.1}" font-size="13" font-weight="bold" text-anchor="middle" fill="{c}">✕</text>"#
                    );
                }
            }
        }
    }
}

/// The legend at `ly`: the four series, the measured line (when
/// measured), the published points and the ✕ mark.
fn legend(o: &mut String, s: &Sweep, w: f64, ly: f64) {
    // Legend.
    let mut lx = 40.0;
    for (name, _, ops, color) in SERIES {
        let dash = if ops == "rdma" {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            o,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2.5"{dash}/><text x="{}" y="{}" font-size="12">{name}</text>"#,
            lx + 26.0,
            lx + 32.0,
            ly + 4.0
        );
        lx += 265.0;
    }
    let ly2 = ly + 22.0;
    if let Some(on) = s.measured_on.as_deref() {
        let _ = writeln!(
            o,
            r##"<circle cx="{}" cy="{}" r="5" fill="white" stroke="#9467bd" stroke-width="2"/><text x="{}" y="{}" font-size="12">write-lat measured on {}, classic, k posted</text>"##,
            w - 390.0,
            ly2 + 22.0,
            w - 380.0,
            ly2 + 26.0,
            xml(on
                .split(" (")
                .next()
                .and_then(|x| x.rsplit(" on ").next())
                .unwrap_or(on))
        );
    }
    let _ = writeln!(
        o,
        r#"<rect x="40" y="{}" width="8" height="8" fill="black"/><text x="54" y="{}" font-size="12">published: left = blog latency (shifted to the model's 1-SGE level), right = blog estimate wr x (64 B + 16 B x sge)</text>"#,
        ly2 - 4.0,
        ly2 + 4.0
    );
    let _ = writeln!(
        o,
        r##"<text x="40" y="{}" font-size="12" fill="#333">✕ = QP rejected by sizing at this max_send_sge (blue: classic ops, green: rdma-only ops)</text>"##,
        ly2 + 26.0
    );
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn nice_step(raw: f64) -> f64 {
    let raw = raw.max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * mag >= raw {
            return m * mag;
        }
    }
    10.0 * mag
}

fn fmt_tick(v: f64) -> String {
    if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}
