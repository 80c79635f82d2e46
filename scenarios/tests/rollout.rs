//! The rollout bucket (CONTRACT C): candidates through the qualification procedure.

use rehearsal_scenarios::rehearse;

#[tokio::test]
async fn unpullable_candidate() {
    rehearse("unpullable_candidate").await;
}

#[tokio::test]
async fn http_only_candidate() {
    rehearse("http_only_candidate").await;
}

#[tokio::test]
async fn format_change_compatible_rollback() {
    rehearse("format_change_compatible_rollback").await;
}

#[tokio::test]
async fn format_change_restore_required_rollback() {
    rehearse("format_change_restore_required_rollback").await;
}
