//! Every picture tidemark draws is written whole: drawn into memory, then through a temporary
//! file renamed into place. A reader never sees half a picture, and a symbolic link put where
//! the picture goes is replaced, never written through.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, IntoDrawingArea, SVGBackend};

use super::ReportError;

/// Draws with `draw` on an SVG canvas of `size` (width, height in pixels), then writes the
/// picture to `path`.
pub(crate) fn write_svg(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let mut svg = String::new();
    draw(SVGBackend::with_string(&mut svg, size).into_drawing_area())?;
    crate::record::write_atomic(path, svg.as_bytes()).map_err(|e| ReportError::at(path, e))
}
