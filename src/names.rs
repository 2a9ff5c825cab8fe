//! Names of the C-facing enums (status, algorithm, arena category, report
//! format, dtype, memory kind, ownership), from one list per enum.
//!
//! Each enum is declared as plain Rust (cbindgen reads the declaration, and
//! does not expand macros) and gets its names from one [`c_enum!`] list right
//! below it. The list gives [`CEnum::ALL`], the name of each value (and the
//! same name NUL-terminated, for the `nnm_*_name` exports), `from_name` and
//! `from_value`. Its `match` is exhaustive and its order is checked at compile
//! time, so a variant added to the enum but not to the list, or listed out of
//! numeric order, does not build.

#[cfg(feature = "std")]
use std::ffi::{c_char, CStr};

#[cfg(feature = "std")]
use crate::status::{Error, Result};

/// A fieldless `#[repr(C)]` enum whose values are `0..ALL.len()` and have
/// names. Implemented by [`c_enum!`].
#[cfg(feature = "std")]
pub trait CEnum: Copy + PartialEq + 'static {
    /// Every value, in numeric order: `ALL[i] as u32 == i`.
    const ALL: &'static [Self];
    /// What one value is called in messages ("algorithm").
    const WHAT: &'static str;
    /// Other names `from_name` takes (another project's spellings, so a
    /// drop-in keeps its configuration strings); reports use the names.
    const ALIASES: &'static [(&'static str, Self)];

    /// Its name followed by a NUL.
    fn name_nul(self) -> &'static str;

    /// The error of [`CEnum::from_value`] for a value out of range.
    fn value_error(value: u32) -> Error;

    /// Its name.
    fn as_str(self) -> &'static str {
        let s = self.name_nul();
        &s[..s.len() - 1]
    }

    /// Its name as a static C string.
    fn c_name(self) -> &'static CStr {
        CStr::from_bytes_with_nul(self.name_nul().as_bytes()).expect("c_enum! names have one NUL, at the end")
    }

    /// Its name as a static NUL-terminated `const char *` (never freed).
    #[inline]
    fn c_name_ptr(self) -> *const c_char {
        self.name_nul().as_ptr().cast()
    }

    /// Every name, in numeric order, joined by ", " (for messages).
    fn known_names() -> String {
        Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
    }

    /// The value named `name` (or an alias); the error lists the known
    /// names.
    fn from_name(name: &str) -> Result<Self> {
        let alias = || Self::ALIASES.iter().find(|(a, _)| *a == name).map(|&(_, v)| v);
        Self::ALL.iter().copied().find(|v| v.as_str() == name).or_else(alias).ok_or_else(|| unknown_name::<Self>(name))
    }

    /// The value with C value `value`.
    fn from_value(value: u32) -> Result<Self> {
        usize::try_from(value).ok().and_then(|i| Self::ALL.get(i)).copied().ok_or_else(|| Self::value_error(value))
    }
}

#[cfg(feature = "std")]
#[cold]
#[inline(never)]
fn unknown_name<E: CEnum>(name: &str) -> Error {
    Error::invalid(format!("unknown {} '{name}' (known: {})", E::WHAT, E::known_names()))
}

/// Implements [`CEnum`] (and inherent `const fn name`, for const contexts)
/// from one list, optionally followed by aliases (the macro is
/// crate-private, so the example is text, not a doctest):
///
/// ```text
/// c_enum! {
///     ReportFormat, "report format",
///     value_error(value) => format!("unknown report format {value} (0: text, 1: json)"),
///     { Text = "text", Json = "json" }
///     aliases { "txt" => Text }
/// }
/// ```
macro_rules! c_enum {
    ($ty:ident, $what:literal, value_error($value:ident) => $message:expr, { $($variant:ident = $name:literal),+ $(,)? }
     $(aliases { $($alias:literal => $aliased:ident),+ $(,)? })?) => {
        // Inherent twins of the trait's items: callers need no import, and
        // `name` stays usable in const contexts.
        #[allow(dead_code)]
        impl $ty {
            /// Every value, in numeric order.
            pub const ALL: &'static [Self] = &[$($ty::$variant),+];

            /// Its name (the one `from_name` takes).
            pub const fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }

            /// Its name followed by a NUL (a static C string).
            pub const fn name_nul(self) -> &'static str {
                match self {
                    $($ty::$variant => concat!($name, "\0"),)+
                }
            }

            /// The value named `name`; the error lists the known names.
            #[cfg(feature = "std")]
            pub fn from_name(name: &str) -> $crate::status::Result<Self> {
                <Self as $crate::names::CEnum>::from_name(name)
            }

            /// The value with C value `value`.
            #[cfg(feature = "std")]
            pub fn from_value(value: u32) -> $crate::status::Result<Self> {
                <Self as $crate::names::CEnum>::from_value(value)
            }
        }

        #[cfg(feature = "std")]
        impl $crate::names::CEnum for $ty {
            const ALL: &'static [Self] = <$ty>::ALL;
            const WHAT: &'static str = $what;
            const ALIASES: &'static [(&'static str, Self)] = &[$($(($alias, $ty::$aliased)),+)?];

            #[inline]
            fn name_nul(self) -> &'static str {
                <$ty>::name_nul(self)
            }

            #[cold]
            fn value_error($value: u32) -> $crate::status::Error {
                $crate::status::Error::invalid($message)
            }
        }

        // Listed in numeric order from 0: `from_value` indexes ALL.
        const _: () = {
            let all = <$ty>::ALL;
            let mut i = 0;
            while i < all.len() {
                assert!(all[i] as usize == i, concat!(stringify!($ty), ": c_enum! must list the values 0, 1, 2, ... in order"));
                i += 1;
            }
        };
    };
}
pub(crate) use c_enum;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::{Category, ReportFormat};
    use crate::net::{Dtype, MemKind, Ownership};
    use crate::plan::Algorithm;
    use crate::status::Status;

    fn round_trips<E: CEnum + std::fmt::Debug>() {
        for (i, &v) in E::ALL.iter().enumerate() {
            assert_eq!(E::from_value(i as u32).unwrap(), v);
            assert_eq!(E::from_name(v.as_str()).unwrap(), v, "{v:?}");
            assert_eq!(v.c_name().to_str().unwrap(), v.as_str());
            // SAFETY: c_name_ptr points to a static NUL-terminated string.
            assert_eq!(unsafe { CStr::from_ptr(v.c_name_ptr()) }, v.c_name());
            assert!(!v.as_str().is_empty() && !v.as_str().contains('\0'), "{v:?}");
        }
        let names: std::collections::HashSet<&str> = E::ALL.iter().map(|v| v.as_str()).collect();
        assert_eq!(names.len(), E::ALL.len(), "{}: names are distinct", E::WHAT);
        for &(alias, v) in E::ALIASES {
            assert!(!names.contains(alias), "{}: alias '{alias}' is a name", E::WHAT);
            assert_eq!(E::from_name(alias).unwrap(), v);
        }
        let n = E::ALL.len() as u32;
        assert_eq!(E::from_value(n).unwrap_err().status(), Status::InvalidArgument);
        assert_eq!(E::from_value(u32::MAX).unwrap_err().status(), Status::InvalidArgument);
        let e = E::from_name("no such name").unwrap_err();
        assert_eq!(e.message(), format!("unknown {} 'no such name' (known: {})", E::WHAT, E::known_names()));
    }

    #[test]
    fn every_c_enum_round_trips_its_names_and_values() {
        round_trips::<Status>();
        round_trips::<Algorithm>();
        round_trips::<Category>();
        round_trips::<ReportFormat>();
        round_trips::<Dtype>();
        round_trips::<MemKind>();
        round_trips::<Ownership>();
        round_trips::<crate::region::TensorKind>();
        round_trips::<crate::pool::StrategyKind>();
    }

    #[test]
    fn value_errors_keep_their_wording() {
        assert_eq!(Algorithm::from_value(11).unwrap_err().message(), "unknown algorithm value 11 (0 to 10)");
        assert_eq!(ReportFormat::from_value(2).unwrap_err().message(), "unknown report format 2 (0: text, 1: json)");
        assert_eq!(Dtype::from_value(9).unwrap_err().message(), "dtype 9 is not an nnm_dtype (0..=8)");
        assert_eq!(MemKind::from_value(3).unwrap_err().message(), "memory kind 3 is not an nnm_mem_kind (0..=2)");
        assert_eq!(Ownership::from_value(7).unwrap_err().message(), "ownership 7 is not an nnm_ownership (0..=2)");
        assert_eq!(
            Algorithm::from_name("fast").unwrap_err().message(),
            "unknown algorithm 'fast' (known: auto, tflm, linear, size-first-fit, size-best-fit, lifetime-first-fit, \
             live-step, conflict, exact, floor-first, sequential)"
        );
    }
}
