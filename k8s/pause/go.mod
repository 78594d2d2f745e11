module linklab.local/pause

go 1.22
