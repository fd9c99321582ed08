//! The memory panel: each epoch's peak by category as a stacked bar over the epoch, memory per
//! step as lines, the figures at run start, each epoch's end and after release as dots, the
//! limit, and memory actions as labelled vertical lines.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::place::Placed;
use super::{Chart, DrawError, Entry, Mark, MIB};
use crate::memory::Action;
use crate::memory::Breakdown;
use crate::record::{Event, StepSample};
use crate::report::palette::{BLUE, ORANGE, RED};

const GREY: RGBColor = RGBColor(110, 110, 110);

/// A breakdown category: its name, colour, and bytes.
type Category = (&'static str, RGBColor, fn(&Breakdown) -> u64);

/// The breakdown's categories, bottom to top, with their colours.
const CATEGORIES: [Category; 6] = [
    ("weights", RGBColor(174, 199, 232), |b| b.weights),
    ("gradients", RGBColor(255, 187, 120), |b| b.gradients),
    ("optimizer", RGBColor(152, 223, 138), |b| b.optimizer),
    ("data", RGBColor(197, 176, 213), |b| b.data),
    ("activations", RGBColor(255, 152, 150), |b| b.activations),
    ("other", RGBColor(210, 210, 210), |b| b.other),
];

/// What the memory panel draws.
pub struct MemoryPanel<'a> {
    /// The snapshots that are points of the lines (not markers), placed.
    pub figures: &'a [Placed<'a>],
    /// Memory actions and resumes, placed.
    pub actions: &'a [Placed<'a>],
    /// The step trace, placed.
    pub steps: &'a [(f64, StepSample)],
    pub limit: Option<u64>,
    pub x_max: f64,
    pub y_max: f64,
}

impl MemoryPanel<'_> {
    /// Draws everything, adding legend entries to `legend`.
    pub fn draw(
        &self,
        chart: &mut Chart<'_, '_>,
        legend: &mut Vec<Entry>,
    ) -> Result<(), DrawError> {
        self.draw_breakdowns(chart, legend)?;
        self.draw_in_use(chart, legend)?;
        self.draw_peaks(chart, legend)?;
        self.draw_reserved(chart, legend)?;
        if let Some(limit) = self.limit {
            let y = limit as f64 / MIB;
            let line = vec![(-0.25, y), (self.x_max, y)];
            chart.draw_series(LineSeries::new(line, BLACK.stroke_width(2)))?;
            legend.push((format!("limit {y:.1} MiB"), BLACK, Mark::Line));
        }
        self.draw_markers(chart)
    }

    /// Each epoch's peak by category, stacked over the epoch's width.
    fn draw_breakdowns(
        &self,
        chart: &mut Chart<'_, '_>,
        legend: &mut Vec<Entry>,
    ) -> Result<(), DrawError> {
        let bars: Vec<(f64, &Breakdown)> = self
            .figures
            .iter()
            .filter(|(_, s)| s.event == Event::Epoch)
            .filter_map(|(x, s)| Some((*x, s.breakdown.as_ref()?)))
            .collect();
        if bars.is_empty() {
            return Ok(());
        }
        for (x, breakdown) in &bars {
            let mut bottom = 0.0;
            for (_, color, bytes) in CATEGORIES {
                let top = bottom + bytes(breakdown) as f64 / MIB;
                let corners = [(x - 0.97, bottom), (x - 0.03, top)];
                chart.draw_series(std::iter::once(Rectangle::new(corners, color.filled())))?;
                bottom = top;
            }
        }
        for (name, color, _) in CATEGORIES.iter().rev() {
            legend.push((format!("peak: {name}"), *color, Mark::Fill));
        }
        Ok(())
    }

    /// In use: at run start, after each step's update, at each epoch's end and after release.
    fn draw_in_use(
        &self,
        chart: &mut Chart<'_, '_>,
        legend: &mut Vec<Entry>,
    ) -> Result<(), DrawError> {
        let dots: Vec<(f64, f64)> = self
            .figures
            .iter()
            .map(|(x, s)| (*x, s.memory.bytes_in_use as f64 / MIB))
            .collect();
        let mut line: Vec<(f64, f64)> = dots.clone();
        line.extend(self.steps.iter().map(|(x, p)| (*x, p.in_use as f64 / MIB)));
        line.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart.draw_series(LineSeries::new(line, BLUE.stroke_width(2)))?;
        chart.draw_series(dots.into_iter().map(|p| Circle::new(p, 3, BLUE.filled())))?;
        legend.push(("in use".into(), BLUE, Mark::Line));
        Ok(())
    }

    /// The peak per step; without a step trace (a hand-written loop that records none), each
    /// epoch's peak. The after-release point has no peak of its own.
    fn draw_peaks(
        &self,
        chart: &mut Chart<'_, '_>,
        legend: &mut Vec<Entry>,
    ) -> Result<(), DrawError> {
        let (points, name): (Vec<(f64, f64)>, &str) = if self.steps.is_empty() {
            let epochs = self
                .figures
                .iter()
                .filter(|(_, s)| s.event != Event::RunEnd)
                .map(|(x, s)| (*x, s.memory.peak_bytes_in_use as f64 / MIB));
            (epochs.collect(), "peak in use")
        } else {
            let steps = self.steps.iter().map(|(x, p)| (*x, p.peak as f64 / MIB));
            (steps.collect(), "peak in use per step")
        };
        chart.draw_series(LineSeries::new(points.clone(), RED.stroke_width(1)))?;
        let drawn = points.iter().map(|p| p.1).fold(0.0, f64::max);
        if self.steps.is_empty() || points.len() < 2 {
            chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, RED.filled())))?;
        }
        // A peak no line shows, labelled: the breach of a limit, read at the action that
        // answered it (a failed run's last), and the peak of a run that ended inside its first
        // epoch (a failure), read at its end.
        let acted =
            |s: &&Placed| s.1.event == Event::MemoryAction && s.1.action != Some(Action::Cleanup);
        let no_epoch = !self.figures.iter().any(|(_, s)| s.event == Event::Epoch);
        let unseen = (self.actions.iter().filter(acted))
            .chain((self.figures.iter()).filter(|(_, s)| no_epoch && s.event == Event::RunEnd))
            .map(|(x, s)| (*x, s.memory.peak_bytes_in_use as f64 / MIB))
            .filter(|(_, y)| *y > drawn * 1.001)
            // The first of equal peaks: the action's, where the run's end repeats it.
            .reduce(|a, b| if b.1 > a.1 { b } else { a });
        if let Some((x, y)) = unseen {
            chart.draw_series(std::iter::once(Circle::new((x, y), 4, RED.filled())))?;
            let font = ("sans-serif", 13).into_font().color(&RED);
            let font = font.pos(Pos::new(HPos::Left, VPos::Center));
            let text = Text::new(format!("  peak {y:.1} MiB"), (x, y), font);
            chart.draw_series(std::iter::once(text))?;
        }
        legend.push((name.into(), RED, Mark::Line));
        Ok(())
    }

    /// Reserved, at the snapshots.
    fn draw_reserved(
        &self,
        chart: &mut Chart<'_, '_>,
        legend: &mut Vec<Entry>,
    ) -> Result<(), DrawError> {
        let points: Vec<(f64, f64)> = self
            .figures
            .iter()
            .map(|(x, s)| (*x, s.memory.bytes_reserved as f64 / MIB))
            .collect();
        let style = ORANGE.stroke_width(1);
        chart.draw_series(DashedLineSeries::new(points.clone(), 6, 4, style))?;
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 2, ORANGE.filled())),
        )?;
        legend.push(("reserved".into(), ORANGE, Mark::Dashed));
        Ok(())
    }

    /// Memory actions and resumes as grey vertical lines with their names.
    fn draw_markers(&self, chart: &mut Chart<'_, '_>) -> Result<(), DrawError> {
        let (y_max, x_span) = (self.y_max, self.x_max + 0.25);
        for ((x, s), row) in self.actions.iter().zip(label_rows(self.actions, x_span)) {
            // Each row of labels sits 5% of the height below the one above.
            let top = y_max * (0.96 - 0.05 * row as f64);
            let line = vec![(*x, 0.0), (*x, top - y_max * 0.035)];
            chart.draw_series(LineSeries::new(line, GREY.stroke_width(1)))?;
            let anchor = match right_anchored(*x, x_span) {
                true => HPos::Right,
                false => HPos::Left,
            };
            let font = ("sans-serif", 13).into_font().color(&GREY);
            let font = font.pos(Pos::new(anchor, VPos::Top));
            let text = Text::new(marker_label(s), (*x, top), font);
            chart.draw_series(std::iter::once(text))?;
        }
        Ok(())
    }
}

/// A marker's label: the action, and for one that changed the micro-batch, the new size.
fn marker_label(s: &crate::record::Snapshot) -> String {
    match (s.event, s.action) {
        (Event::Resume, _) => "resume".into(),
        (_, Some(action @ (Action::Shrink | Action::Fit))) => {
            format!("{action} to {}", s.micro_batch)
        }
        (_, action) => action.map_or("action", Action::name).into(),
    }
}

/// Whether the label of a marker at `x` ends at its line instead of starting there: near the
/// right edge, so that the legend's strip does not cut it ("clean" for "cleanup").
fn right_anchored(x: f64, x_span: f64) -> bool {
    x > 0.85 * x_span - 0.25
}

/// The row of each marker's label (0 at the top): a label (about an eighth of the x span wide,
/// to the right of its line or, near the right edge, to its left) goes on the first row where
/// it starts after the label before it ends, so that none overlap.
pub fn label_rows(actions: &[Placed], x_span: f64) -> Vec<usize> {
    let width = 0.12 * x_span;
    let mut ends: Vec<f64> = Vec::new();
    actions
        .iter()
        .map(|(x, _)| {
            let (start, end) = match right_anchored(*x, x_span) {
                true => (x - width, *x),
                false => (*x, x + width),
            };
            let row = ends.iter().position(|&e| start >= e).unwrap_or(ends.len());
            if row == ends.len() {
                ends.push(f64::MIN);
            }
            ends[row] = end;
            row
        })
        .collect()
}
