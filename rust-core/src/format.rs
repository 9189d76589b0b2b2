//! Number formatting shared by messages and rendering.

/// `task 4` / `tasks 4, 9, 12`.
pub fn task_list(ids: &[u64]) -> String {
    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
    if ids.len() == 1 {
        format!("task {}", ids[0])
    } else {
        format!("tasks {}", ids.join(", "))
    }
}

/// `10023` -> `10,023`.
pub fn thousands(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}
