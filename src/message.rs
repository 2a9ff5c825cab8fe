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

    /// Appends `n` in hexadecimal with a `0x` prefix (addresses).
    fn hex(&mut self, n: usize) {
        const HEX: [&str; 16] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"];
        self.put("0x");
        let mut shift = (usize::BITS - 4) as usize;
        while shift > 0 && (n >> shift) == 0 {
            shift -= 4;
        }
        loop {
            self.put(HEX[(n >> shift) & 15]);
            if shift == 0 {
                break;
            }
            shift -= 4;
        }
    }

    /// Appends a wide figure in decimal (sizes computed in `u128` so that
    /// no intermediate overflows); a figure above `usize::MAX` prints as
    /// `usize::MAX`.
    fn wide(&mut self, n: u128) {
        self.number(usize::try_from(n).unwrap_or(usize::MAX));
    }
}

#[cfg(feature = "std")]
impl Text for String {
    fn put(&mut self, piece: &str) {
        self.push_str(piece);
    }
}

/// The embedded build's last error, where the safe core's errors record
/// their messages as they are made (the host's errors carry theirs).
///
/// One static buffer of [`BYTES`] bytes, stored one by one with relaxed
/// atomic stores (plain byte stores on every Cortex-M, v6-M included), so
/// it needs no lock and no `unsafe`; with `strip-messages`, only the status.
#[cfg(not(feature = "std"))]
pub(crate) mod last {
    use core::ffi::c_char;
    use core::sync::atomic::{AtomicU8, Ordering};

    use super::Text;
    use crate::status::Status;

    /// Bytes of the buffer, its NUL included (`NNM_BARE_ERROR_BYTES`).
    pub(crate) const BYTES: usize = 160;

    #[cfg(not(feature = "strip-messages"))]
    static LAST_ERROR: [AtomicU8; BYTES] = [const { AtomicU8::new(0) }; BYTES];

    #[cfg(feature = "strip-messages")]
    static LAST_STATUS: AtomicU8 = AtomicU8::new(0);

    /// Appends to [`LAST_ERROR`], cutting what does not fit.
    #[cfg(not(feature = "strip-messages"))]
    struct Buffer {
        at: usize,
    }

    #[cfg(not(feature = "strip-messages"))]
    impl Text for Buffer {
        fn put(&mut self, piece: &str) {
            for &b in piece.as_bytes() {
                // The last byte stays for the NUL.
                if self.at + 1 >= BYTES {
                    return;
                }
                if let Some(slot) = LAST_ERROR.get(self.at) {
                    slot.store(if b == 0 { b'?' } else { b }, Ordering::Relaxed);
                }
                self.at += 1;
            }
        }
    }

    /// Records a failure: the message `describe` writes or, with
    /// `strip-messages`, only `status` (`describe` is then never called,
    /// and its code and text leave the library).
    #[inline]
    #[allow(unused_variables)] // `status` without strip-messages, `describe` with it
    pub(crate) fn record(status: Status, describe: impl FnOnce(&mut dyn Text)) {
        #[cfg(not(feature = "strip-messages"))]
        {
            let mut out = Buffer { at: 0 };
            describe(&mut out);
            if let Some(slot) = LAST_ERROR.get(out.at) {
                slot.store(0, Ordering::Relaxed);
            }
        }
        #[cfg(feature = "strip-messages")]
        LAST_STATUS.store(status as u8, Ordering::Relaxed);
    }

    /// The last failure as a C string: its message, or with
    /// `strip-messages` its status's name ("" before any failure).
    pub(crate) fn text() -> *const c_char {
        // An AtomicU8 has the size and alignment of a u8: the buffer is a C
        // string, NUL-terminated by its last byte, which is never written.
        #[cfg(not(feature = "strip-messages"))]
        return LAST_ERROR.as_ptr().cast();
        #[cfg(feature = "strip-messages")]
        return match Status::ALL.get(usize::from(LAST_STATUS.load(Ordering::Relaxed))) {
            Some(&s) if s != Status::Ok => s.name_nul().as_ptr().cast(),
            _ => c"".as_ptr(),
        };
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
        s.put(" ");
        s.hex(0);
        s.put(" ");
        s.hex(0x1f00);
        s.put(" ");
        s.hex(usize::MAX);
        s.put(" ");
        s.wide(u128::MAX);
        assert_eq!(s, format!("0 {} -2147483648 -1 42 0x0 0x1f00 {:#x} {}", usize::MAX, usize::MAX, usize::MAX));
    }
}
