--------------------------------------------------------------------------------------------------
-- Static logic (templates/job_submit_logic.lua of slurm-supernode). It reads only the SITE table
-- above: no I/O, no shelling out, no loops over nodes (it runs inside slurmctld under its locks).
--
-- For a job in one of SITE.partitions (no partition given: the default partition):
--   * node count: -N (min_nodes); else ceil(--gpus / GPUs per node); else ceil(-n /
--     --ntasks-per-node); else 1. Rounded UP to whole super nodes; min_nodes = max_nodes = that.
--   * one super node:  --constraint=[sn0|sn1|...] (matching OR: all nodes share one feature),
--     AND-ed with the job's own constraint if it has one;
--   * k > 1 super nodes: strategy block -> --segment=<size> (topology/block) where the plugin
--     has the segment_size field (Slurm 26.05); Slurm 24.11's plugin has none, so the job keeps
--     its whole-super-node count and the user is told to add --segment themselves;
--     strategy switches -> --switches=k (best effort); features/auto -> rejected with a hint to
--     use 'snrun -S k' (a heterogeneous job of k one-super-node components: exact everywhere);
--   * more nodes than the partition's super nodes hold: rejected at submit with a message.
-- Left alone: jobs whose constraint already names a super node feature (snrun's own components,
-- snrun --allow-partial), jobs with --segment already set, and every other partition.
--------------------------------------------------------------------------------------------------

local NO_VAL = slurm.NO_VAL or 4294967294
local NO_VAL16 = slurm.NO_VAL16 or 65534

-- A numeric job_desc field the user actually set (unset fields read as NO_VAL*, 0 or nil).
local function is_set(value, no_val)
   return value ~= nil and value > 0 and value < no_val
end

local function words(s, sep)
   local out = {}
   for w in string.gmatch(s or "", "[^" .. sep .. "]+") do
      out[#out + 1] = w
   end
   return out
end

-- Does a --constraint expression name one of the site's super node features?
local function names_supernode(features)
   if features == nil or features == "" then
      return false
   end
   for w in string.gmatch(features, "[^&|%[%]%*,:%(%)!{}<>=\"' \t]+") do
      if SITE.features[w] then
         return true
      end
   end
   return false
end

-- The partition a job goes to: its own, else the partition flagged Default in slurm.conf.
local function partition_of(job_desc, part_list)
   local p = job_desc.partition
   if p ~= nil and p ~= "" then
      return p
   end
   if part_list ~= nil then
      for name, part in pairs(part_list) do
         if part.flag_default == 1 then
            return name
         end
      end
   end
   return SITE.default_partition
end

-- GPUs per job from tres_per_job ("gres:gpu:16", "gres/gpu:h100:16"), or nil.
local function gpus_per_job(tres)
   if tres == nil or SITE.gres_name == "" then
      return nil
   end
   for _, item in ipairs(words(tres, ",")) do
      local parts = words(item, ":/")
      if #parts >= 3 and parts[1] == "gres" and parts[2] == SITE.gres_name then
         local n = tonumber(parts[#parts])
         if n ~= nil and n > 0 then
            return n
         end
      end
   end
   return nil
end

-- Nodes the job asks for, and how we know (for the message).
local function wanted_nodes(job_desc, part)
   if is_set(job_desc.min_nodes, NO_VAL) then
      return job_desc.min_nodes, "-N " .. job_desc.min_nodes
   end
   local gpus = gpus_per_job(job_desc.tres_per_job)
   if gpus ~= nil and part.devices > 0 then
      local n = math.ceil(gpus / part.devices)
      return n, string.format("--gpus=%d (%d nodes of %d GPUs)", gpus, n, part.devices)
   end
   local tasks, per_node = job_desc.num_tasks, job_desc.ntasks_per_node
   if is_set(tasks, NO_VAL) and is_set(per_node, NO_VAL16) then
      local n = math.ceil(tasks / per_node)
      return n, string.format("-n %d --ntasks-per-node=%d (%d nodes)", tasks, per_node, n)
   end
   return 1, "a job without -N (1 node)"
end

local function plural(n, word)
   if n == 1 then
      return n .. " " .. word
   end
   return n .. " " .. word .. "s"
end

-- Whole super nodes that hold n nodes: {class, k}. The rule is snrun's (site/rounding.py),
-- evaluated by the exporter into ROUND_ANY / ROUND_ONE: looked up here, never recomputed.
-- multi=false: one super node only. nil when nothing fits.
local function round_up(part, n, multi)
   local entry = (multi and ROUND_ANY or ROUND_ONE)[n]
   if not entry then
      return nil
   end
   return { class = part.classes[entry[1]], k = entry[2] }
end

local function capacity(part)
   local most, text = 0, {}
   for _, class in ipairs(part.classes) do
      most = math.max(most, class.size * class.count)
      text[#text + 1] = plural(class.count, "super node") .. " of " .. class.size
   end
   return most, table.concat(text, ", ")
end

local function reject(msg)
   slurm.log_user("%s", "snrun job_submit: " .. msg) -- log_user formats: keep % literal
   return slurm.ESLURM_INVALID_NODE_COUNT or slurm.ERROR
end

-- Apply the whole-super-node rule to job_desc for partition name pname. own_features: the
-- constraint the job has now (on modify, the job record's when the update does not set one).
local function enforce(job_desc, pname, own_features, n, how)
   local part = SITE.partitions[pname]
   local multi = SITE.strategy == "block" or SITE.strategy == "switches"
   local plan = round_up(part, n, multi)
   if plan == nil then
      local most, what = capacity(part)
      local any = round_up(part, n, true)
      if any ~= nil then
         return reject(string.format(
            "partition %s runs jobs on whole super nodes; %s needs %s of %d nodes, and a plain"
               .. " job gets only one here. Use 'snrun -S %d' (or a heterogeneous job of %d"
               .. " components, each -N %d --constraint=[%s] --exclusive).",
            pname, how, plural(any.k, "super node"), any.class.size, any.k, any.k,
            any.class.size, any.class.constraint))
      end
      return reject(string.format(
         "partition %s runs jobs on whole super nodes (%s): %s can never fit; ask for at most"
            .. " %d nodes.", pname, what, how, most))
   end
   local size, k = plan.class.size, plan.k
   local total = size * k
   job_desc.min_nodes = total
   job_desc.max_nodes = total
   local where
   if k == 1 then
      local c = "[" .. plan.class.constraint .. "]"
      if own_features ~= nil and own_features ~= "" then
         -- AND the job's own constraint; an OR list of its own goes in parentheses.
         if string.find(own_features, "|", 1, true) and not string.find(own_features, "[", 1, true) then
            c = "(" .. own_features .. ")&" .. c
         else
            c = own_features .. "&" .. c
         end
      end
      job_desc.features = c
      where = "one super node of " .. plan.class.constraint
   elseif SITE.strategy == "block" and job_desc.segment_size ~= nil then
      -- The plugin has the field (Slurm 26.05 reads 0 or NO_VAL16 when unset): set it.
      job_desc.segment_size = size
      where = plural(k, "super node") .. " (--segment=" .. size .. ")"
   elseif SITE.strategy == "block" then
      -- Slurm 24.11's job_submit/lua has no segment_size field: it can neither be set nor
      -- read here (setting it only logs "unrecognized field"). Say so, and what to type.
      where = plural(k, "super node") .. " (no segment set: this Slurm's job_submit/lua has"
         .. " no segment field)"
      slurm.log_user("snrun job_submit: partition %s: this Slurm's job_submit/lua can neither"
                        .. " set nor see --segment; unless you passed --segment=%d, the job"
                        .. " waits for %d nodes in one aligned block aggregate. 'sbatch -N %d"
                        .. " --segment=%d' or 'snrun -S %d' runs it on any %d whole super nodes.",
                     pname, size, total, total, size, k, k)
   else
      job_desc.req_switch = k
      where = plural(k, "super node") .. " (--switches=" .. k .. ", best effort)"
   end
   if total ~= n then
      slurm.log_user("snrun job_submit: partition %s runs jobs on whole super nodes: %s became"
                        .. " -N %d on %s", pname, how, total, where)
   end
   slurm.log_info("snrun job_submit: partition %s: %s -> %d nodes on %s", pname, how, total,
                  where)
   return slurm.SUCCESS
end

-- The enforced partition of a job, nil when none; a string (message) for a bad mix.
local function enforced_partition(pspec)
   local names = words(pspec, ",")
   local hit, miss = nil, nil
   for _, name in ipairs(names) do
      if SITE.partitions[name] ~= nil then
         hit = hit or name
      else
         miss = miss or name
      end
   end
   if hit ~= nil and miss ~= nil then
      return nil, string.format(
         "partitions %s mix a whole-super-node partition (%s) with another (%s); submit to"
            .. " one of them", pspec, hit, miss)
   end
   return hit, nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   local pname, bad = enforced_partition(partition_of(job_desc, part_list))
   if bad ~= nil then
      return reject(bad)
   end
   if pname == nil then
      return slurm.SUCCESS -- not a super node partition: untouched
   end
   if names_supernode(job_desc.features) then
      return slurm.SUCCESS -- already placed on super nodes (snrun's components, --allow-partial)
   end
   if is_set(job_desc.segment_size, NO_VAL16) then
      return slurm.SUCCESS -- --segment given: topology/block keeps segments in blocks
   end
   local n, how = wanted_nodes(job_desc, SITE.partitions[pname])
   return enforce(job_desc, pname, job_desc.features, n, how)
end

-- Modify (scontrol update JobId=.. NumNodes=..): a new node count must itself be whole super
-- nodes (the constraint or segment set at submit stays as it is, so nothing is re-planned);
-- otherwise the update is refused with the count to use. Partition moves are not re-checked.
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   local n = job_desc.min_nodes
   if not is_set(n, NO_VAL) then
      return slurm.SUCCESS
   end
   local pspec = job_desc.partition
   if pspec == nil or pspec == "" then
      pspec = job_rec.partition
   end
   local pname, bad = enforced_partition(pspec or "")
   if bad ~= nil then
      return reject(bad)
   end
   if pname == nil then
      return slurm.SUCCESS
   end
   local multi = SITE.strategy == "block" or SITE.strategy == "switches"
   local plan = round_up(SITE.partitions[pname], n, multi)
   if plan == nil then
      local most, what = capacity(SITE.partitions[pname])
      return reject(string.format(
         "partition %s runs jobs on whole super nodes (%s): NumNodes=%d does not fit; at most"
            .. " %d nodes (and only one super node per plain job unless the site uses block).",
         pname, what, n, most))
   end
   local total = plan.k * plan.class.size
   if total ~= n then
      return reject(string.format(
         "partition %s runs jobs on whole super nodes: NumNodes=%d is not whole; use"
            .. " NumNodes=%d", pname, n, total))
   end
   job_desc.max_nodes = n
   if SITE.strategy == "switches" then
      job_desc.req_switch = plan.k
   end
   return slurm.SUCCESS
end

slurm.log_info("snrun job_submit: loaded for site %s (%d super node partitions)", SITE.name,
               SITE.partition_count)
return slurm.SUCCESS
