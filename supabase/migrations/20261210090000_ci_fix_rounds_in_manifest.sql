-- The manifest's delivery carries ci_fix_rounds (the runner's check rounds, contract §20): a change
-- of it alone moves the manifest's revision, so a running VM hears of it (24_pull_requests.sql).
drop trigger projects_delivery_changed on public.projects;
create trigger projects_delivery_changed
  before update of delivery, draft_pull_requests, branch_prefix, ci_fix_rounds on public.projects
  for each row
  when (old.delivery is distinct from new.delivery
        or old.draft_pull_requests is distinct from new.draft_pull_requests
        or old.branch_prefix is distinct from new.branch_prefix
        or old.ci_fix_rounds is distinct from new.ci_fix_rounds)
  execute function private.next_manifest_revision();
