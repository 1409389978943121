//! The sweep's SVG chart ([`svg`]), drawn with `plotters` (SVG backend and
//! line series only): modeled latency (left panel) and SQ ring bytes
//! (right panel) against max_send_sge at one max_send_wr, with the
//! published figures, the command-path measurements and the rejected
//! points. Built step by step: the title, per panel its data, value range,
//! axes, series, measured line, reference line and rejection marks, then
//! the legend.

use super::{find, Sweep, BLOG_LATENCY_US};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The plotted series: (legend name, posted SGEs (0 = k = max_send_sge),
/// send-op set, colour).
const SERIES: [(&str, u32, &str, RGBColor); 4] = [
    (
        "classic, 1 SGE posted",
        1,
        "classic",
        RGBColor(0x1f, 0x77, 0xb4),
    ),
    (
        "classic, k = max_send_sge posted",
        0,
        "classic",
        RGBColor(0xd6, 0x27, 0x28),
    ),
    (
        "rdma-only ops, 1 SGE posted",
        1,
        "rdma",
        RGBColor(0x2c, 0xa0, 0x2c),
    ),
    (
        "rdma-only ops, k posted",
        0,
        "rdma",
        RGBColor(0xff, 0x7f, 0x0e),
    ),
];

/// The measured (command path) line's colour.
const MEASURED: RGBColor = RGBColor(0x94, 0x67, 0xbd);

/// The whole picture.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// One panel: max_send_sge × value, ticks at the swept max_send_sge values
/// and every y step.
type Panel<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Ticked, Ticked>>;

/// A linear axis whose ticks (and grid lines) are given: the swept
/// max_send_sge values, or every y step.
struct Ticked {
    /// The value range, mapped linearly.
    axis: RangedCoordf64,
    /// Where the ticks are.
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.axis.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Bold (labelled) points only: no light grid lines.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.axis.range()
    }
}

/// A font of `px` SVG pixels (the SVG backend writes size / 1.24).
fn font(px: f64) -> TextStyle<'static> {
    ("Helvetica, Arial, sans-serif", px * 1.24)
        .into_font()
        .into()
}

/// A bold [`font`].
fn bold(px: f64) -> TextStyle<'static> {
    ("Helvetica, Arial, sans-serif", px * 1.24)
        .into_font()
        .style(FontStyle::Bold)
        .into()
}

/// An SVG chart: modeled latency (left) and SQ ring bytes (right) against
/// max_send_sge at max_send_wr = `wr`. Fails only on a drawing error
/// reported by plotters (the SVG is written into a `String`).
pub fn svg(s: &Sweep, wr: u32, sges: &[u32]) -> anyhow::Result<String> {
    let (w, h) = (1100u32, 580u32);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        root.fill(&WHITE)?;
        title(&root, s, wr, w)?;
        let max_sge = *sges.iter().max().unwrap_or(&32) as f64;
        // Panel geometry: plot left edges, width, height, top.
        let panels = [
            (70, "Modeled one-way latency [ns]"),
            (620, "SQ ring bytes per QP [KiB]"),
        ];
        let (pw, ph, top) = (420, 340, 80);
        for (pi, (x0, ylabel)) in panels.iter().enumerate() {
            let data = panel_data(s, wr, sges, pi);
            let (ymin, ymax, step) = y_range(&data, pi);
            let area = root.clone().shrink((x0 - 60, top - 10), (pw + 80, ph + 50));
            let mut chart = ChartBuilder::on(&area)
                .margin_top(10)
                .margin_right(20)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(
                    Ticked {
                        axis: (0.0..max_sge).into(),
                        ticks: sges.iter().map(|&k| k as f64).collect(),
                    },
                    Ticked {
                        // Never empty, so one value alone sits at the bottom.
                        axis: (ymin..ymax.max(ymin + 1e-9)).into(),
                        ticks: y_ticks(ymin, ymax, step),
                    },
                )?;
            axes(&mut chart, ylabel)?;
            series_lines(&mut chart, &data.pts)?;
            measured_line(&mut chart, &data.meas)?;
            reference_line(&mut chart, &data.extra)?;
            rejected_marks(&mut chart, s, wr, sges, ymin)?;
        }
        legend(&root, s, w, top + ph + 62)?;
        root.present()?;
    }
    Ok(out)
}

/// The two title lines.
fn title(root: &Area<'_>, s: &Sweep, wr: u32, w: u32) -> anyhow::Result<()> {
    let centre = Pos::new(HPos::Center, VPos::Bottom);
    root.draw(&Text::new(
        format!(
            "RC RDMA WRITE: modeled latency and SQ ring size vs max_send_sge (max_send_wr {wr})"
        ),
        (w as i32 / 2, 28),
        bold(18.0).pos(centre),
    ))?;
    root.draw(&Text::new(
        format!(
            "latency: NIC model {}, non-inline, 1 WR/doorbell; ring: exact rdma-core sizing; device max_sq_desc_sz {} B",
            s.model_name, s.caps.max_sq_desc_sz
        ),
        (w as i32 / 2, 48),
        font(12.0).pos(centre).color(&RGBColor(0x55, 0x55, 0x55)),
    ))?;
    Ok(())
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

/// The y ticks: every `step` from `ymin` to `ymax`.
fn y_ticks(ymin: f64, ymax: f64, step: f64) -> Vec<f64> {
    let mut v = Vec::new();
    let mut y = ymin;
    while y <= ymax + 1e-9 {
        v.push(y);
        y += step;
    }
    v
}

/// The panel's frame, the grid at every tick with its labels and the two
/// axis titles.
fn axes(chart: &mut Panel<'_, '_>, ylabel: &str) -> anyhow::Result<()> {
    chart
        .configure_mesh()
        .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
        .axis_style(RGBColor(0x33, 0x33, 0x33))
        .label_style(font(12.0))
        .axis_desc_style(font(14.0))
        .x_desc("max_send_sge")
        .y_desc(ylabel)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| fmt_tick(*v))
        .draw()?;
    let (x, y) = (chart.x_range(), chart.y_range());
    chart.draw_series(std::iter::once(Rectangle::new(
        [(x.start, y.start), (x.end, y.end)],
        RGBColor(0x33, 0x33, 0x33).stroke_width(1),
    )))?;
    Ok(())
}

/// Each series as a line (dashed for rdma-only ops) with its points.
fn series_lines(chart: &mut Panel<'_, '_>, pts: &[(usize, Vec<(f64, f64)>)]) -> anyhow::Result<()> {
    for (si, v) in pts {
        let color = SERIES[*si].3;
        if v.is_empty() {
            continue;
        }
        let style = color.stroke_width(3);
        if SERIES[*si].2 == "rdma" {
            chart.draw_series(DashedLineSeries::new(v.iter().copied(), 6, 4, style))?;
        } else {
            chart.draw_series(LineSeries::new(v.iter().copied(), style))?;
        }
        chart.draw_series(v.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
    }
    Ok(())
}

/// The measured latency line with open circles (when there is one).
fn measured_line(chart: &mut Panel<'_, '_>, meas: &[(f64, f64)]) -> anyhow::Result<()> {
    if !meas.is_empty() {
        chart.draw_series(LineSeries::new(
            meas.iter().copied(),
            MEASURED.stroke_width(2),
        ))?;
        // Open circles: white, ringed.
        chart.draw_series(meas.iter().map(|&p| Circle::new(p, 5, WHITE.filled())))?;
        chart.draw_series(
            meas.iter()
                .map(|&p| Circle::new(p, 5, MEASURED.stroke_width(2))),
        )?;
    }
    Ok(())
}

/// The published reference series: black squares, dotted.
fn reference_line(chart: &mut Panel<'_, '_>, extra: &[(f64, f64)]) -> anyhow::Result<()> {
    chart.draw_series(DashedLineSeries::new(
        extra.iter().copied(),
        2,
        3,
        BLACK.stroke_width(1),
    ))?;
    chart.draw_series(
        extra
            .iter()
            .map(|&p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], BLACK.filled())),
    )?;
    Ok(())
}

/// A ✕ at the bottom of the panel for each max_send_sge whose QP the
/// sizing rejects (blue: classic ops, green, above it: rdma-only).
fn rejected_marks(
    chart: &mut Panel<'_, '_>,
    s: &Sweep,
    wr: u32,
    sges: &[u32],
    ymin: f64,
) -> anyhow::Result<()> {
    for &k in sges {
        for ops in ["classic", "rdma"] {
            if let Some(r) = find(s, wr, k, 1, ops, false) {
                if r.error.is_some() {
                    let c = if ops == "classic" {
                        SERIES[0].3
                    } else {
                        SERIES[2].3
                    };
                    let dy = -10 - if ops == "rdma" { 14 } else { 0 };
                    let style = bold(13.0)
                        .color(&c)
                        .pos(Pos::new(HPos::Center, VPos::Bottom));
                    chart.draw_series(std::iter::once(
                        EmptyElement::at((k as f64, ymin)) + Text::new("✕", (0, dy), style),
                    ))?;
                }
            }
        }
    }
    Ok(())
}

/// The legend at `ly`: the four series, the measured line (when
/// measured), the published points and the ✕ mark.
fn legend(root: &Area<'_>, s: &Sweep, w: u32, ly: i32) -> anyhow::Result<()> {
    let left = Pos::new(HPos::Left, VPos::Center);
    let mut lx = 40;
    for (name, _, ops, color) in SERIES {
        let line = [(lx, ly), (lx + 26, ly)];
        if ops == "rdma" {
            root.draw(&DashedPathElement::new(line, 6, 4, color.stroke_width(3)))?;
        } else {
            root.draw(&PathElement::new(line, color.stroke_width(3)))?;
        }
        root.draw(&Text::new(name, (lx + 32, ly), font(12.0).pos(left)))?;
        lx += 265;
    }
    let ly2 = ly + 22;
    if let Some(on) = s.measured_on.as_deref() {
        let w = w as i32;
        root.draw(&Circle::new((w - 390, ly2 + 22), 5, WHITE.filled()))?;
        root.draw(&Circle::new(
            (w - 390, ly2 + 22),
            5,
            MEASURED.stroke_width(2),
        ))?;
        let device = on
            .split(" (")
            .next()
            .and_then(|x| x.rsplit(" on ").next())
            .unwrap_or(on);
        root.draw(&Text::new(
            format!("write-lat measured on {device}, classic, k posted"),
            (w - 380, ly2 + 22),
            font(12.0).pos(left),
        ))?;
    }
    root.draw(&Rectangle::new(
        [(40, ly2 - 4), (48, ly2 + 4)],
        BLACK.filled(),
    ))?;
    root.draw(&Text::new(
        "published: left = blog latency (shifted to the model's 1-SGE level), right = blog estimate wr x (64 B + 16 B x sge)",
        (54, ly2),
        font(12.0).pos(left),
    ))?;
    root.draw(&Text::new(
        "✕ = QP rejected by sizing at this max_send_sge (blue: classic ops, green: rdma-only ops)",
        (40, ly2 + 22),
        font(12.0).pos(left).color(&RGBColor(0x33, 0x33, 0x33)),
    ))?;
    Ok(())
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
