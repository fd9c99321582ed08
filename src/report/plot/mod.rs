//! `memory.svg`: one picture per run, drawn with plotters. The memory panel on top (each
//! epoch's peak by category, memory per step, the limit, memory actions); under it, on the same
//! epoch axis, the losses, the monitored validation metric and the learning rate per epoch.

mod memory;
mod place;
mod training;

use super::error::ReportError;
use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::record::{read_snapshots, Event, Snapshot};
use memory::MemoryPanel;
use place::{positions, step_points, Placed};
use training::{panels, Panel};

const MIB: f64 = 1024.0 * 1024.0;
const WIDTH: u32 = 900;
/// The chart's width; the legend has the strip to its right.
const CHART_WIDTH: u32 = 730;
const MEMORY_HEIGHT: u32 = 460;
const PANEL_HEIGHT: u32 = 150;

/// The chart's plotting area.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A drawing area of the picture.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// What drawing on the SVG can fail with.
type DrawError = DrawingAreaErrorKind<std::io::Error>;

/// How a legend entry shows its colour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Mark {
    Line,
    Dashed,
    Fill,
}

/// A legend entry: its text, colour and mark.
pub(crate) type Entry = (String, RGBColor, Mark);

/// What the picture shows beyond the snapshots.
#[derive(Debug, Clone, Copy, Default)]
pub struct PictureOf<'a> {
    /// The run's name, for the title.
    pub title: &'a str,
    /// The memory limit in bytes.
    pub limit: Option<u64>,
    /// The monitored validation metric (`val_accuracy`); `val_loss` when `None`.
    pub monitor: Option<&'a str>,
}

/// Draws the picture of `snapshots` into an SVG at `path`.
pub fn render_memory_svg(
    snapshots: &[Snapshot],
    of: PictureOf,
    path: &Path,
) -> Result<(), ReportError> {
    let err = |e: &dyn std::fmt::Display| ReportError::at(path, e);
    let placed = positions(snapshots);
    let steps = step_points(snapshots);
    let epochs: Vec<Placed> = placed
        .iter()
        .copied()
        .filter(|(_, s)| s.event == Event::Epoch)
        .collect();
    let panels = panels(&epochs, of.monitor);
    let height = MEMORY_HEIGHT + PANEL_HEIGHT * panels.len() as u32;
    super::write_svg(path, (WIDTH, height), |root| {
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (top, bottom) = root.split_vertically(MEMORY_HEIGHT);
        let x_max = placed.iter().map(|(x, _)| *x).fold(1.0, f64::max) + 0.25;
        draw_memory(&top, snapshots, &placed, &steps, of, x_max).map_err(|e| err(&e))?;
        let rows = bottom.split_evenly((panels.len().max(1), 1));
        for (panel, area) in panels.iter().zip(&rows) {
            draw_panel(area, panel, x_max).map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))
    })
}

/// The memory panel, with its legend beside it.
fn draw_memory(
    area: &Area<'_>,
    snapshots: &[Snapshot],
    placed: &[Placed],
    steps: &[(f64, crate::record::StepSample)],
    of: PictureOf,
    x_max: f64,
) -> Result<(), DrawError> {
    let (actions, figures): (Vec<Placed>, Vec<Placed>) =
        placed.iter().copied().partition(|(_, s)| is_marker(s));
    let y_max = snapshots
        .iter()
        .flat_map(|s| [s.memory.bytes_reserved, s.memory.peak_bytes_in_use])
        .chain(steps.iter().map(|(_, p)| p.peak))
        .chain(of.limit)
        .max()
        .unwrap_or(1) as f64
        / MIB
        * 1.2;
    let (chart_area, legend_area) = area.split_horizontally(CHART_WIDTH);
    let source = snapshots
        .first()
        .map_or("".into(), |s| s.memory.source.to_string());
    let caption = format!("{}: memory per step and epoch ({source})", of.title);
    let mut chart = chart_on(&chart_area, Some(caption), x_max, (0.0, y_max.max(0.1)))?;
    let x_desc = "epoch (0 = run start; last point = after release)";
    epoch_mesh(&mut chart, x_desc, "MiB", |y| format!("{y:.0}"))?;
    let mut legend = Vec::new();
    let panel = MemoryPanel {
        figures: &figures,
        actions: &actions,
        steps,
        limit: of.limit,
        x_max,
        y_max,
    };
    panel.draw(&mut chart, &mut legend)?;
    draw_legend(&legend_area, &legend, 40)
}

/// A training panel, with its legend beside it.
fn draw_panel(area: &Area<'_>, panel: &Panel, x_max: f64) -> Result<(), DrawError> {
    let (chart_area, legend_area) = area.split_horizontally(CHART_WIDTH);
    let mut chart = chart_on(&chart_area, None, x_max, panel.y_range())?;
    let (lo, hi) = panel.y_range();
    let small = lo.abs().max(hi.abs()) < 0.01;
    let format = |y: &f64| {
        if small {
            format!("{y:.2e}")
        } else {
            format!("{y:.3}")
        }
    };
    epoch_mesh(&mut chart, "epoch", &panel.title, format)?;
    for (_, color, points) in &panel.lines {
        chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?;
        chart.draw_series(points.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
    }
    draw_legend(&legend_area, &panel.legend(), 20)
}

/// A chart over epochs `-0.25..x_max` and `y` on `area`, the same width for every panel so
/// that their epochs line up.
fn chart_on<'a, 'b>(
    area: &'a Area<'b>,
    caption: Option<String>,
    x_max: f64,
    (y_lo, y_hi): (f64, f64),
) -> Result<Chart<'a, 'b>, DrawError> {
    let mut builder = ChartBuilder::on(area);
    if let Some(caption) = caption {
        builder.caption(caption, ("sans-serif", 20));
    }
    builder
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.25f64..x_max, y_lo..y_hi)
}

/// The mesh: whole epochs on x, described by `x_desc`; `y_desc` on y with `y_format`.
fn epoch_mesh(
    chart: &mut Chart<'_, '_>,
    x_desc: &str,
    y_desc: &str,
    y_format: impl Fn(&f64) -> String,
) -> Result<(), DrawError> {
    let x_max = chart.x_range().end;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc(x_desc)
        .x_labels(((x_max.ceil() as usize) * 2 + 2).min(40))
        .x_label_formatter(&|x| {
            if x.fract() == 0.0 && *x >= 0.0 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        })
        .y_desc(y_desc)
        .y_labels(6)
        .y_label_formatter(&y_format)
        .draw()
}

/// Snapshots drawn as markers rather than points of the lines.
fn is_marker(s: &Snapshot) -> bool {
    matches!(s.event, Event::MemoryAction | Event::Resume)
}

/// The legend, in its own strip beside the chart, from `top` down: it covers no line and no
/// label.
pub(crate) fn draw_legend(area: &Area<'_>, legend: &[Entry], top: i32) -> Result<(), DrawError> {
    for (i, (text, color, mark)) in legend.iter().enumerate() {
        let y = top + 20 * i as i32;
        match mark {
            Mark::Line => area.draw(&PathElement::new(
                vec![(4, y), (26, y)],
                color.stroke_width(2),
            ))?,
            Mark::Dashed => {
                for x in [4, 13, 22] {
                    area.draw(&PathElement::new(
                        vec![(x, y), (x + 5, y)],
                        color.stroke_width(1),
                    ))?;
                }
            }
            Mark::Fill => area.draw(&Rectangle::new([(4, y - 6), (26, y + 6)], color.filled()))?,
        }
        let font = ("sans-serif", 13).into_font().color(&BLACK);
        area.draw(&Text::new(text.clone(), (32, y - 7), font))?;
    }
    Ok(())
}

/// Draws `memory.svg` beside the `snapshots.jsonl` at `snapshots`, from what that file holds.
pub fn draw_memory_svg(snapshots: &Path, of: PictureOf) -> Result<(), ReportError> {
    let read = read_snapshots(snapshots).map_err(|e| ReportError::at(snapshots, e))?;
    render_memory_svg(&read, of, &snapshots.with_file_name("memory.svg"))
}

#[cfg(test)]
pub(super) mod tests;
