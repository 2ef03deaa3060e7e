-- The floor-level hourly rollup read by building and local dates (issue 40; docs/performance.md, "The report's
-- profiles read by the range asked"): a building-month's profile reads one building's rows of the range through this
-- index; with (customer, building, floor, start) and (local_date) alone it read the building's whole history and
-- grew with the days stored. occupancy_floor_hours_date_idx stays for a range of every building.
CREATE INDEX `occupancy_floor_hours_building_date_idx` ON `occupancy_floor_hours` (`customer_id`,`building_id`,`local_date`);
