//! What a caught panic said, for the errors and logs that replace it.

use std::any::Any;

/// The message of a panic payload caught by `catch_unwind`: the text given
/// to `panic!` (a `&str` or a `String`); `None` for any other payload.
pub(crate) fn message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload.downcast_ref::<&str>().copied().or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

#[cfg(test)]
mod tests {
    #[test]
    fn messages_of_str_string_and_other_payloads() {
        let of = |f: fn()| std::panic::catch_unwind(f).unwrap_err();
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let (literal, formatted, other) =
            (of(|| panic!("plain")), of(|| panic!("with {}", 2)), of(|| std::panic::panic_any(7_u8)));
        std::panic::set_hook(prev);
        assert_eq!(super::message(&*literal), Some("plain"));
        assert_eq!(super::message(&*formatted), Some("with 2"));
        assert_eq!(super::message(&*other), None);
    }
}
