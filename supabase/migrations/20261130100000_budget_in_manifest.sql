-- The monthly budget is in the VM's manifest (contract §11a): changing it moves the revision, so
-- the VM fetches it again and its sessions get --max-budget-usd of what is left.
create trigger projects_budget_changed
  before update of monthly_budget_usd on public.projects
  for each row
  when (old.monthly_budget_usd is distinct from new.monthly_budget_usd)
  execute function private.next_manifest_revision();
