//! Messages with figures written without the heap and without
//! `core::fmt` (whose code is kilobytes on a microcontroller): a [`Text`]
//! sink takes pieces of text and decimal numbers. The heap-free parts of the
//! crate describe their errors through it; the host collects the pieces
//! into a `String`, the embedded build into a fixed buffer.

/// The decimal digits as text.
const DIGITS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

/// Where a message's pieces go.
pub trait Text {
    /// Appends `piece`.
    fn put(&mut self, piece: &str);

    /// Appends `n` in decimal.
    fn number(&mut self, n: usize) {
        // The highest power of ten not above n, then one digit per power:
        // no buffer, no slicing, nothing that could panic.
        let mut power = core::num::NonZeroUsize::MIN;
        while let Some(next) = power.checked_mul(core::num::NonZeroUsize::new(10).unwrap_or(power)) {
            if next.get() > n {
                break;
            }
            power = next;
        }
        loop {
            self.put(DIGITS[(n / power) % 10]);
            match core::num::NonZeroUsize::new(power.get() / 10) {
                Some(lower) => power = lower,
                None => break,
            }
        }
    }

    /// Appends `n` in decimal, with its sign.
    fn signed(&mut self, n: i32) {
        if n < 0 {
            self.put("-");
        }
        self.number(n.unsigned_abs() as usize);
    }
}

#[cfg(feature = "std")]
impl Text for String {
    fn put(&mut self, piece: &str) {
        self.push_str(piece);
    }
}

#[cfg(test)]
mod tests {
    use super::Text;

    #[test]
    fn numbers_are_written_in_decimal() {
        let mut s = String::new();
        s.number(0);
        s.put(" ");
        s.number(usize::MAX);
        s.put(" ");
        s.signed(i32::MIN);
        s.put(" ");
        s.signed(-1);
        s.put(" ");
        s.signed(42);
        assert_eq!(s, format!("0 {} -2147483648 -1 42", usize::MAX));
    }
}
