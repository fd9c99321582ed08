//! `memory.svg`: memory per epoch, one picture per run, drawn with plotters.

use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::snapshots::{as_it_stands, read_snapshots, Event, Snapshot};

const MIB: f64 = 1024.0 * 1024.0;

/// A snapshot and its place on the x axis.
type Placed<'a> = (f64, &'a Snapshot);

/// Reads one memory figure from a snapshot.
type Figure = fn(&Snapshot) -> u64;

/// Where each snapshot of the run [as it stands](as_it_stands) sits on the x axis: `run_start`
/// at 0, epoch `e` at `e`, `run_end` half an epoch after the last, a memory action a quarter
/// after the snapshot before it, and a `resume` after `e` epochs at `e`.
fn positions(snapshots: &[Snapshot]) -> Vec<Placed<'_>> {
    let mut last = 0.0;
    as_it_stands(snapshots)
        .into_iter()
        .map(|s| {
            let x = match s.event {
                Event::RunStart => 0.0,
                Event::Epoch | Event::Resume => s.epoch as f64,
                Event::RunEnd => s.epoch as f64 + 0.5,
                Event::MemoryAction => return (last + 0.25, s),
            };
            last = x;
            (x, s)
        })
        .collect()
}

/// Snapshots drawn as markers rather than points of the lines.
fn is_marker(s: &Snapshot) -> bool {
    matches!(s.event, Event::MemoryAction | Event::Resume)
}

/// Draws in-use, reserved and peak memory per epoch, marks memory actions, and draws `limit`
/// as a horizontal line. Writes an SVG to `path`.
pub fn render_memory_svg(
    snapshots: &[Snapshot],
    limit: Option<u64>,
    title: &str,
    path: &Path,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let placed = positions(snapshots);
    let (actions, figures): (Vec<Placed>, Vec<Placed>) =
        placed.iter().copied().partition(|(_, s)| is_marker(s));
    let x_max = placed.iter().map(|(x, _)| *x).fold(1.0, f64::max) + 0.25;
    let y_max = snapshots
        .iter()
        .flat_map(|s| [s.memory.bytes_reserved, s.memory.peak_bytes_in_use])
        .chain(limit)
        .max()
        .unwrap_or(1) as f64
        / MIB
        * 1.15;

    let root = SVGBackend::new(path, (900, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (root, legend_area) = root.split_horizontally(760);
    let source = snapshots
        .first()
        .map_or("".into(), |s| s.memory.source.to_string());
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{title}: memory per epoch ({source})"),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.25f64..x_max, 0f64..y_max.max(0.1))
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("epoch (0 = run start; last point = after release)")
        .x_labels(((x_max.ceil() as usize) * 2 + 2).min(40))
        .x_label_formatter(&|x| {
            if x.fract() == 0.0 && *x >= 0.0 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        })
        .y_desc("MiB")
        .draw()
        .map_err(|e| err(&e))?;

    let mut legend = Vec::new();
    draw_figures(&mut chart, &figures, &mut legend).map_err(|e| err(&e))?;
    if let Some(limit) = limit {
        draw_limit(&mut chart, limit, x_max, &mut legend).map_err(|e| err(&e))?;
    }
    draw_markers(&mut chart, &actions, y_max, x_max + 0.25).map_err(|e| err(&e))?;
    draw_legend(&legend_area, &legend).map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// The chart's plotting area.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// What drawing on the SVG can fail with.
type DrawError = DrawingAreaErrorKind<std::io::Error>;

/// A legend entry: its text and colour.
type Entry = (String, RGBColor);

/// In use, reserved and peak in use, each a line with a dot per point. The after-release point
/// (`run_end`) has no peak of its own (its figure is the run's): the peak line stops at the
/// last epoch, and the point shows what is held after release.
fn draw_figures(
    chart: &mut Chart<'_, '_>,
    figures: &[Placed],
    legend: &mut Vec<Entry>,
) -> Result<(), DrawError> {
    let blue = RGBColor(31, 119, 180);
    let orange = RGBColor(255, 127, 14);
    let red = RGBColor(214, 39, 40);
    let series: [(&str, RGBColor, Figure); 3] = [
        ("in use", blue, |s| s.memory.bytes_in_use),
        ("reserved", orange, |s| s.memory.bytes_reserved),
        ("peak in use", red, |s| s.memory.peak_bytes_in_use),
    ];
    for (name, color, value) in series {
        let points: Vec<(f64, f64)> = figures
            .iter()
            .filter(|(_, s)| name != "peak in use" || s.event != Event::RunEnd)
            .map(|(x, s)| (*x, value(s) as f64 / MIB))
            .collect();
        chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?;
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 3, color.filled())),
        )?;
        legend.push((name.to_string(), color));
    }
    Ok(())
}

/// The limit as a horizontal line.
fn draw_limit(
    chart: &mut Chart<'_, '_>,
    limit: u64,
    x_max: f64,
    legend: &mut Vec<Entry>,
) -> Result<(), DrawError> {
    let y = limit as f64 / MIB;
    chart.draw_series(LineSeries::new(
        vec![(-0.25, y), (x_max, y)],
        BLACK.stroke_width(2),
    ))?;
    legend.push((format!("limit {y:.1} MiB"), BLACK));
    Ok(())
}

/// The legend, in its own strip beside the chart: it covers no line and no label.
fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    legend: &[Entry],
) -> Result<(), DrawError> {
    for (i, (text, color)) in legend.iter().enumerate() {
        let y = 60 + 22 * i as i32;
        area.draw(&PathElement::new(
            vec![(4, y), (26, y)],
            color.stroke_width(2),
        ))?;
        area.draw(&Text::new(
            text.clone(),
            (32, y - 7),
            ("sans-serif", 13).into_font().color(&BLACK),
        ))?;
    }
    Ok(())
}

/// Memory actions and resumes as grey vertical lines with their names.
fn draw_markers(
    chart: &mut Chart<'_, '_>,
    actions: &[Placed],
    y_max: f64,
    x_span: f64,
) -> Result<(), DrawError> {
    let grey = RGBColor(120, 120, 120);
    for ((x, s), row) in actions.iter().zip(label_rows(actions, x_span)) {
        // Each row of labels sits 5% of the height below the one above.
        let top = y_max * (0.95 - 0.05 * row as f64);
        chart.draw_series(LineSeries::new(
            vec![(*x, 0.0), (*x, top - y_max * 0.03)],
            grey.stroke_width(1),
        ))?;
        let label = match s.event {
            Event::Resume => "resume",
            _ => s.action.as_deref().unwrap_or("action"),
        };
        chart.draw_series(std::iter::once(Text::new(
            label.to_string(),
            (*x, top),
            ("sans-serif", 13).into_font().color(&grey),
        )))?;
    }
    Ok(())
}

/// The row of each marker's label (0 at the top): a label goes on the first row where it
/// starts at least a tenth of the x span after the label before it, so that none overlap.
fn label_rows(actions: &[Placed], x_span: f64) -> Vec<usize> {
    let mut ends: Vec<f64> = Vec::new();
    actions
        .iter()
        .map(|(x, _)| {
            let row = ends.iter().position(|&end| *x >= end).unwrap_or(ends.len());
            if row == ends.len() {
                ends.push(0.0);
            }
            ends[row] = x + 0.1 * x_span;
            row
        })
        .collect()
}

/// Draws `memory.svg` beside the `snapshots.jsonl` at `snapshots`, from what that file holds.
pub fn draw_memory_svg(snapshots: &Path, limit: Option<u64>, title: &str) -> Result<(), String> {
    let read = read_snapshots(snapshots).map_err(|e| e.to_string())?;
    render_memory_svg(&read, limit, title, &snapshots.with_file_name("memory.svg"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{MemorySource, MemoryUsage};

    fn snap(event: Event, epoch: usize, in_use: u64, action: Option<&str>) -> Snapshot {
        Snapshot {
            event,
            epoch,
            step: 0,
            loss: None,
            val_loss: None,
            samples_per_sec: None,
            memory: MemoryUsage {
                bytes_in_use: in_use,
                bytes_reserved: in_use * 2,
                peak_bytes_in_use: in_use * 3 / 2,
                bytes_padding: 0,
                source: MemorySource::Host,
            },
            rss_bytes: None,
            loss_scale: None,
            skipped_steps: None,
            lr: None,
            clipped_steps: None,
            breakdown: None,
            micro_batch: 8,
            accumulation_steps: 1,
            action: action.map(String::from),
            detail: None,
            retained: None,
            elapsed_s: 0.0,
            metrics: Default::default(),
        }
    }

    #[test]
    fn actions_sit_between_the_snapshots_around_them() {
        let s = [
            snap(Event::MemoryAction, 0, 1, Some("reserve")),
            snap(Event::RunStart, 0, 1, None),
            snap(Event::MemoryAction, 1, 1, Some("shrink")),
            snap(Event::Epoch, 1, 1, None),
            snap(Event::Epoch, 2, 1, None),
            snap(Event::MemoryAction, 2, 1, Some("cleanup")),
            snap(Event::RunEnd, 2, 1, None),
        ];
        let xs: Vec<f64> = positions(&s).iter().map(|(x, _)| *x).collect();
        assert_eq!(xs, vec![0.25, 0.0, 0.25, 1.0, 2.0, 2.25, 2.5]);
    }

    #[test]
    fn labels_close_together_go_on_rows_below_each_other() {
        let s = [
            snap(Event::MemoryAction, 0, 1, Some("fit")),
            snap(Event::MemoryAction, 0, 1, Some("shrink")),
            snap(Event::MemoryAction, 1, 1, Some("cleanup")),
            snap(Event::MemoryAction, 3, 1, Some("cleanup")),
        ];
        let placed: Vec<Placed> = [0.25, 0.3, 0.5, 3.25].into_iter().zip(&s).collect();
        assert_eq!(label_rows(&placed, 4.0), [0, 1, 2, 0]);
        // Wide apart, all on the top row.
        assert_eq!(label_rows(&placed, 0.5), [0, 0, 0, 0]);
    }

    #[test]
    fn a_resume_replaces_what_it_trains_again() {
        let s = [
            snap(Event::RunStart, 0, 1, None),
            snap(Event::Epoch, 1, 1, None),
            snap(Event::Epoch, 2, 2, None),
            snap(Event::Epoch, 3, 3, None),
            snap(Event::RunEnd, 3, 1, None),
            snap(Event::Resume, 2, 4, None),
            snap(Event::Epoch, 3, 5, None),
            snap(Event::RunEnd, 3, 6, None),
        ];
        let placed: Vec<(f64, u64)> = positions(&s)
            .iter()
            .map(|(x, s)| (*x, s.memory.bytes_in_use))
            .collect();
        let expected = [(0.0, 1), (1.0, 1), (2.0, 2), (2.0, 4), (3.0, 5), (3.5, 6)];
        assert_eq!(placed, expected);
    }

    #[test]
    fn writes_an_svg_with_series_legend_limit_and_actions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.svg");
        let s = [
            snap(Event::RunStart, 0, 10 << 20, None),
            snap(Event::Epoch, 1, 20 << 20, None),
            snap(Event::MemoryAction, 1, 20 << 20, Some("cleanup")),
            snap(Event::RunEnd, 1, 5 << 20, None),
        ];
        render_memory_svg(&s, Some(64 << 20), "t", &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"));
        for text in [
            "in use",
            "reserved",
            "peak in use",
            "limit 64.0 MiB",
            "cleanup",
            "t: memory per epoch (host)",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        assert!(
            svg.matches("<polyline").count() >= 4,
            "three series and the limit"
        );
    }
}
