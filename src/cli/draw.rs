//! Where the CLI's bars and live views draw: stderr, with the cursor left [`MARGIN`] columns
//! short of the terminal's edge.
//!
//! indicatif pads every line it draws with spaces to the terminal's width and counts on the
//! terminal wrapping there to start the next line, so after its last line the cursor rests in
//! the last column. A `^C` the terminal echoes there wraps onto a new line; the bar's clear, as
//! the run stops, then clears that new line and leaves the bar drawn above the run's last lines.
//! [`Short`] holds each line's padding back until it knows whether another line follows: it
//! writes it whole before one (the wrap still starts it), and [`MARGIN`] spaces short after the
//! last, where the echo then lands on the bar's own line and is cleared with it. The lines the
//! CLI draws are cut to [`fitted_width`], so the last one always has that much padding.

use std::io;
use std::sync::Mutex;

use console::Term;
use indicatif::{ProgressDrawTarget, TermLike};

/// Columns left free at the right of the last line the CLI draws on a terminal: room for an
/// echoed `^C` and the cursor.
const MARGIN: usize = 3;

/// What a bar or a live view draws to: stderr, redrawn at most 20 times a second (indicatif's
/// rate for stderr), the cursor left short of the edge.
pub(super) fn stderr_target() -> ProgressDrawTarget {
    ProgressDrawTarget::term_like_with_hz(Box::new(Short::new(Term::buffered_stderr())), 20)
}

/// The width a line drawn on stderr may take: the terminal's, less [`MARGIN`]; `None` where
/// stderr is no terminal.
pub(super) fn fitted_width() -> Option<usize> {
    let (_, columns) = Term::stderr().size_checked()?;
    Some(usize::from(columns).saturating_sub(MARGIN).max(10))
}

/// A terminal whose line padding (a write of spaces alone) waits for what comes next.
#[derive(Debug)]
struct Short<T> {
    inner: T,
    /// The last line's padding, not yet written.
    padding: Mutex<usize>,
}

impl<T: TermLike> Short<T> {
    fn new(inner: T) -> Self {
        Self {
            inner,
            padding: Mutex::new(0),
        }
    }

    /// Writes the padding held back, less `short` columns.
    fn pad(&self, short: usize) -> io::Result<()> {
        let mut padding = self.padding.lock().unwrap_or_else(|e| e.into_inner());
        let n = std::mem::take(&mut *padding).saturating_sub(short);
        match n {
            0 => Ok(()),
            n => self.inner.write_str(&" ".repeat(n)),
        }
    }
}

impl<T: TermLike> TermLike for Short<T> {
    fn width(&self) -> u16 {
        self.inner.width()
    }
    fn height(&self) -> u16 {
        self.inner.height()
    }
    fn move_cursor_up(&self, n: usize) -> io::Result<()> {
        self.pad(0)?;
        self.inner.move_cursor_up(n)
    }
    fn move_cursor_down(&self, n: usize) -> io::Result<()> {
        self.pad(0)?;
        self.inner.move_cursor_down(n)
    }
    fn move_cursor_right(&self, n: usize) -> io::Result<()> {
        self.pad(0)?;
        self.inner.move_cursor_right(n)
    }
    fn move_cursor_left(&self, n: usize) -> io::Result<()> {
        self.pad(0)?;
        self.inner.move_cursor_left(n)
    }
    fn write_line(&self, s: &str) -> io::Result<()> {
        self.pad(0)?;
        self.inner.write_line(s)
    }
    fn write_str(&self, s: &str) -> io::Result<()> {
        self.pad(0)?;
        if !s.is_empty() && s.bytes().all(|b| b == b' ') {
            *self.padding.lock().unwrap_or_else(|e| e.into_inner()) = s.len();
            return Ok(());
        }
        self.inner.write_str(s)
    }
    fn clear_line(&self) -> io::Result<()> {
        self.pad(0)?;
        self.inner.clear_line()
    }
    fn flush(&self) -> io::Result<()> {
        // indicatif flushes after a draw's last line: its padding stops short of the edge.
        self.pad(MARGIN)?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use indicatif::{ProgressBar, ProgressStyle};

    use super::*;

    /// A 40-column terminal that keeps what is written to it.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<String>>);

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            40
        }
        fn move_cursor_up(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> io::Result<()> {
            self.write_str(&format!("{s}\n"))
        }
        fn write_str(&self, s: &str) -> io::Result<()> {
            self.0.lock().unwrap().push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> io::Result<()> {
            self.write_str("<clear>")
        }
        fn flush(&self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_last_line_drawn_stops_three_columns_short_of_the_edge_where_an_echoed_ctrl_c_fits() {
        let screen = Screen::default();
        let target = ProgressDrawTarget::term_like(Box::new(Short::new(screen.clone())));
        let bar = ProgressBar::with_draw_target(Some(10), target);
        bar.set_style(ProgressStyle::with_template("epoch 1/2 {pos}/{len}  {msg}").unwrap());
        bar.set_message("loss 0.5");
        bar.set_position(3);
        bar.println("warning: a line above the bar");
        bar.finish_and_clear();
        let written = screen.0.lock().unwrap().clone();
        let draws: Vec<&str> = written.split("<clear>").collect();
        // The bar alone: padded to column 37 of 40, the cursor three columns before the edge.
        assert!(
            draws.contains(&format!("{:<37}", "epoch 1/2 3/10  loss 0.5").as_str()),
            "{draws:?}"
        );
        // A line above the bar is padded to the edge, where the terminal's wrap starts the
        // bar's line; the bar, last, stops short again.
        let above = format!(
            "{:<40}{:<37}",
            "warning: a line above the bar", "epoch 1/2 3/10  loss 0.5"
        );
        assert!(draws.contains(&above.as_str()), "{draws:?}");
        assert!(written.ends_with("<clear>"), "cleared last: {written:?}");
    }
}
