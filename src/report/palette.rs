//! The pictures' colours: matplotlib's `tab10`, so that a curve has the colour its readers know
//! from their own plots (the loss blue, the validation orange, a limit red).

use plotters::style::RGBColor;

pub const BLUE: RGBColor = RGBColor(31, 119, 180);
pub const ORANGE: RGBColor = RGBColor(255, 127, 14);
pub const GREEN: RGBColor = RGBColor(44, 160, 44);
pub const RED: RGBColor = RGBColor(214, 39, 40);
pub const PURPLE: RGBColor = RGBColor(148, 103, 189);
pub const BROWN: RGBColor = RGBColor(140, 86, 75);
pub const PINK: RGBColor = RGBColor(227, 119, 194);
pub const GREY: RGBColor = RGBColor(127, 127, 127);
pub const OLIVE: RGBColor = RGBColor(188, 189, 34);
pub const CYAN: RGBColor = RGBColor(23, 190, 207);

/// `tab10` in its order: the `i`-th of many lines (a population's members).
pub fn tab10(i: usize) -> RGBColor {
    [
        BLUE, ORANGE, GREEN, RED, PURPLE, BROWN, PINK, GREY, OLIVE, CYAN,
    ][i % 10]
}
